package org.cudagraph4j;

/**
 * Run by {@link PeerAccessTest} in a child JVM, where no peer access has been enabled yet (it lasts
 * for the process): a launch on device 0 with a buffer of device 1 must be refused, then, once
 * {@link CudaDevice#enablePeerAccess} allowed it, must run and compute the right answer. Exit code 0
 * when all held.
 */
public final class PeerRefusalProbe {
    private static final int N = 1 << 16;

    private PeerRefusalProbe() {}

    public static void main(String[] args) {
        CudaDevice home = Cuda.device(0);
        CudaDevice peer = Cuda.device(1);
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(N, seed);
        float[] y = TestData.randomFloats(N, seed + 1);
        try (CudaLibrary library = TestData.testKernels(); CudaStream stream = home.createStream();
                DeviceBuffer onPeer = TestData.upload(peer, x); DeviceBuffer local = TestData.upload(home, y)) {
            LaunchConfig config = LaunchConfig.of(Dim3.of(N / 256), Dim3.of(256));
            try {
                library.kernel("saxpy").launch(stream, config, N, 2f, onPeer, local);
                System.out.println("FAIL: launched with a buffer of device 1 and no peer access");
                System.exit(1);
            } catch (IllegalArgumentException refused) {
                System.out.println("launch refused: " + refused.getMessage());
            }
            try {
                onPeer.memsetAsync(0, stream);
                System.out.println("FAIL: memsetAsync on device 0's stream reached device 1's memory");
                System.exit(1);
            } catch (IllegalArgumentException refused) {
                System.out.println("memsetAsync refused: " + refused.getMessage());
            }
            stream.synchronize(); // nothing was queued, so nothing faulted
            if (!home.canAccessPeer(peer)) {
                System.out.println(home + " cannot access " + peer + " directly; the refusals are all there is");
                System.exit(0);
            }
            home.enablePeerAccess(peer);
            library.kernel("saxpy").launch(stream, config, N, 2f, onPeer, local);
            stream.synchronize();
            float[] result = local.toFloatArray();
            for (int i = 0; i < N; i++) {
                if (Math.abs(result[i] - Math.fma(2f, x[i], y[i])) > Math.ulp(result[i]) * 2) {
                    System.out.println("FAIL: element " + i + " is " + result[i] + ", " + TestData.seedDescription(seed));
                    System.exit(1);
                }
            }
            System.out.println("after enablePeerAccess: launched, and all " + N + " elements are right");
        }
    }
}

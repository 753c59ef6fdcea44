package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Peer access between the GPUs of one host. With one GPU only the refusals run; the copies and the
 * kernel that reads a peer's memory need two.
 */
@GpuTest
class PeerAccessTest {
    private static final int N = 1 << 20;

    @Test
    void aDeviceIsNotItsOwnPeer() {
        CudaDevice device = TestData.device();
        assertFalse(device.canAccessPeer(device));
        IllegalArgumentException self = assertThrows(IllegalArgumentException.class,
                () -> device.enablePeerAccess(device));
        assertEquals(device + " is its own memory's device, not a peer", self.getMessage());
    }

    @Test
    void copiesBetweenDevicesAreExactWithPeerAccessOrWithout() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        long seed = TestData.newSeed();
        float[] values = TestData.randomFloats(N, seed);
        for (CudaDevice from : devices) {
            for (CudaDevice to : devices) {
                if (from.equals(to)) {
                    continue;
                }
                if (to.canAccessPeer(from)) {
                    to.enablePeerAccess(from);
                    to.enablePeerAccess(from); // again: nothing happens
                } else {
                    assertThrows(UnsupportedOperationException.class, () -> to.enablePeerAccess(from));
                }
                try (DeviceBuffer source = TestData.upload(from, values); DeviceBuffer target = to.allocateFloats(N)) {
                    target.memset(0xFF);
                    target.copyFrom(source);
                    assertArrayEquals(values, target.toFloatArray(), from + " to " + to + ", "
                            + TestData.seedDescription(seed));
                }
            }
        }
    }

    @Test
    void aLaunchIsRefusedABufferOfAnotherDeviceUntilPeerAccessIsEnabled() throws Exception {
        int devices = Cuda.deviceCount();
        assumeTrue(devices >= 2, "needs two GPUs; this host has " + devices);
        // A fresh process: peer access, once enabled by another test here, lasts for the process.
        ChildJvm.Result result = ChildJvm.run(List.of("--enable-native-access=ALL-UNNAMED"), PeerRefusalProbe.class,
                List.of(), 120);
        assertEquals(0, result.exitCode(), result.output());
        assertTrue(result.output().contains("launch refused: kernel saxpy, argument 2: "), result.output());
        assertTrue(result.output().contains("is on device 1, but the launch runs on device 0, which has no peer "
                + "access to it: copy the buffer to device 0, or enable peer access first"), result.output());
        assertTrue(result.output().contains("memsetAsync refused: "), result.output());
    }

    @Test
    void aKernelReadsAPeersMemoryOnceAccessIsEnabled() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        CudaDevice home = devices.get(0);
        CudaDevice peer = devices.get(1);
        assumeTrue(home.canAccessPeer(peer), home + " has no direct access to " + peer);
        home.enablePeerAccess(peer);
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(N, seed);
        float[] y = TestData.randomFloats(N, seed + 1);
        home.makeCurrent();
        try (CudaLibrary library = TestData.testKernels(); CudaStream stream = home.createStream();
                DeviceBuffer onPeer = TestData.upload(peer, x); DeviceBuffer local = TestData.upload(home, y)) {
            library.kernel("saxpy").launch(stream, LaunchConfig.of(Dim3.of(256), Dim3.of(256)), N, 2f, onPeer,
                    local);
            stream.synchronize();
            float[] result = local.toFloatArray();
            for (int i = 0; i < N; i++) {
                assertEquals(Math.fma(2f, x[i], y[i]), result[i], Math.ulp(result[i]) * 2, "element " + i);
            }
        }
    }
}

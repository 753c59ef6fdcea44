package org.cudagraph4j.kernels;

import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.TestData;

/**
 * One random {@code torch.nn.Linear} problem on the device: x ({@code batch x in}), W
 * ({@code out x in}) and b uploaded, y ({@code batch x out}) allocated but not written, and the
 * float64 reference {@code relu(x Wᵀ + b)}. Closing it closes the four buffers.
 */
final class LinearCase implements AutoCloseable {
    final long seed = TestData.newSeed();
    final double[] expected;
    final DeviceBuffer x;
    final DeviceBuffer w;
    final DeviceBuffer b;
    final DeviceBuffer y;

    LinearCase(KernelsFixture gpu, int batch, int in, int out) {
        float[] hostX = TestData.randomFloats(batch * in, seed);
        float[] hostW = TestData.randomFloats(out * in, seed + 1);
        float[] hostB = TestData.randomFloats(out, seed + 2);
        expected = Reference.biasRelu(Reference.gemm(batch, out, in, 1, hostX, hostW, true, 0, null), batch, out,
                hostB);
        x = gpu.upload(hostX);
        w = gpu.upload(hostW);
        b = gpu.upload(hostB);
        y = gpu.allocateFloats((long) batch * out);
    }

    /** The seed's description, to name a failure by. */
    String seedDescription() {
        return TestData.seedDescription(seed);
    }

    @Override
    public void close() {
        try (x; w; b; y) {
            // closed in reverse order
        }
    }
}

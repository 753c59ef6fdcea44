package org.cudagraph4j.benchmarks.server;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The served model's weights: {@code torch.nn.Sequential(Linear, ReLU, Linear, ReLU, …)}, as
 * PyTorch names them in a state dict ({@code 0.weight} [out, in], {@code 0.bias} [out],
 * {@code 2.weight}, …). Both servers load the same {@code .safetensors} file.
 *
 * @param weights per layer, [out, in] row-major
 * @param biases per layer, [out]
 * @param widths the input width, then each layer's output width
 */
public record MlpWeights(List<float[]> weights, List<float[]> biases, List<Integer> widths) {
    /** Checks that the layers chain. */
    public MlpWeights {
        weights = List.copyOf(weights);
        biases = List.copyOf(biases);
        widths = List.copyOf(widths);
        if (weights.isEmpty() || weights.size() != biases.size() || widths.size() != weights.size() + 1) {
            throw new IllegalArgumentException("an MLP needs as many biases as weights and one more width");
        }
        for (int l = 0; l < weights.size(); l++) {
            if (weights.get(l).length != widths.get(l + 1) * widths.get(l) || biases.get(l).length != widths.get(l + 1)) {
                throw new IllegalArgumentException("layer " + l + " does not match widths " + widths);
            }
        }
    }

    /** Floats per input row. */
    public int inputWidth() {
        return widths.getFirst();
    }

    /** Floats per output row. */
    public int outputWidth() {
        return widths.getLast();
    }

    /**
     * A deterministic random model: He-uniform weights, small biases.
     *
     * @param width every layer's in and out width
     * @param layers how many Linear + ReLU layers
     * @param seed the random seed
     * @return the weights
     */
    public static MlpWeights random(int width, int layers, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        List<float[]> weights = new ArrayList<>();
        List<float[]> biases = new ArrayList<>();
        List<Integer> widths = new ArrayList<>(List.of(width));
        double bound = Math.sqrt(6.0 / width);
        for (int l = 0; l < layers; l++) {
            weights.add(uniform(width * width, bound, random));
            biases.add(uniform(width, 0.1, random));
            widths.add(width);
        }
        return new MlpWeights(weights, biases, widths);
    }

    /**
     * Loads a model file.
     *
     * @param file a {@code .safetensors} file with {@code 0.weight}, {@code 0.bias}, {@code 2.weight}, … (F32)
     * @return the weights
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException naming the fault, if it is not such a file
     */
    public static MlpWeights load(Path file) throws IOException {
        Map<String, SafeTensors.Tensor> tensors = SafeTensors.read(file);
        List<float[]> weights = new ArrayList<>();
        List<float[]> biases = new ArrayList<>();
        List<Integer> widths = new ArrayList<>();
        for (int index = 0; tensors.containsKey(index + ".weight"); index += 2) {
            SafeTensors.Tensor weight = tensors.get(index + ".weight");
            SafeTensors.Tensor bias = tensors.get(index + ".bias");
            if (weight.shape().size() != 2 || bias == null || bias.shape().size() != 1
                    || !bias.shape().getFirst().equals(weight.shape().getFirst())) {
                throw new IllegalArgumentException(file + ": layer " + index + " needs weight [out, in] and bias "
                        + "[out], got " + weight.shape() + " and " + (bias == null ? "none" : bias.shape()));
            }
            if (widths.isEmpty()) {
                widths.add(weight.shape().get(1));
            } else if (!widths.getLast().equals(weight.shape().get(1))) {
                throw new IllegalArgumentException(file + ": layer " + index + " takes " + weight.shape().get(1)
                        + " features but the layer before gives " + widths.getLast());
            }
            widths.add(weight.shape().getFirst());
            weights.add(weight.data());
            biases.add(bias.data());
        }
        if (weights.isEmpty()) {
            throw new IllegalArgumentException(file + ": no 0.weight, so no layers");
        }
        if (tensors.size() != 2 * weights.size()) {
            throw new IllegalArgumentException(file + ": " + (tensors.size() - 2 * weights.size())
                    + " tensor(s) are not layers of a Sequential(Linear, ReLU, ...)");
        }
        return new MlpWeights(weights, biases, widths);
    }

    /**
     * Writes this model as PyTorch names it.
     *
     * @param file the file to write
     * @throws IOException if it cannot be written
     */
    public void save(Path file) throws IOException {
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        for (int l = 0; l < weights.size(); l++) {
            tensors.put(2 * l + ".weight", new SafeTensors.Tensor(List.of(widths.get(l + 1), widths.get(l)),
                    weights.get(l)));
            tensors.put(2 * l + ".bias", new SafeTensors.Tensor(List.of(widths.get(l + 1)), biases.get(l)));
        }
        SafeTensors.write(file, tensors, Map.of("format", "pt", "model", "Sequential(Linear, ReLU) x "
                + weights.size()));
    }

    /**
     * The forward pass on the CPU, in float with one fused multiply-add per term, row by row.
     *
     * @param rows {@code n * inputWidth} floats
     * @return {@code n * outputWidth} floats
     */
    public float[] forward(float[] rows) {
        float[] current = rows;
        for (int l = 0; l < weights.size(); l++) {
            int in = widths.get(l);
            int out = widths.get(l + 1);
            int n = current.length / in;
            float[] next = new float[n * out];
            float[] w = weights.get(l);
            for (int r = 0; r < n; r++) {
                for (int o = 0; o < out; o++) {
                    float sum = 0;
                    for (int i = 0; i < in; i++) {
                        sum = Math.fma(current[r * in + i], w[o * in + i], sum);
                    }
                    float value = sum + biases.get(l)[o];
                    next[r * out + o] = value < 0 ? 0 : value;
                }
            }
            current = next;
        }
        return current;
    }

    private static float[] uniform(int length, double bound, SplittableRandom random) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        return values;
    }
}

package org.cudagraph4j.benchmarks.server;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;

/**
 * The served model's weights: {@code torch.nn.Sequential(Linear, ReLU, Linear, ReLU, …)}, as
 * PyTorch names them in a state dict ({@code 0.weight} [out, in], {@code 0.bias} [out],
 * {@code 2.weight}, …), in FP32, FP16 or BF16. Both servers load the same {@code .safetensors} file.
 *
 * @param weights per layer, [out, in] row-major, as floats
 * @param biases per layer, [out], as floats
 * @param widths the input width, then each layer's output width
 * @param elementType the type of the weights, biases, inputs and outputs: FLOAT32, FLOAT16 or BFLOAT16
 */
public record MlpWeights(List<float[]> weights, List<float[]> biases, List<Integer> widths,
        ElementType elementType) {
    /**
     * Checks that the layers chain and that a half-precision model's weights and biases are values
     * of its format.
     *
     * @throws IllegalArgumentException naming the fault
     * @throws NullPointerException if an argument is null
     */
    public MlpWeights {
        weights = List.copyOf(weights);
        biases = List.copyOf(biases);
        widths = List.copyOf(widths);
        SafeTensors.dtype(Objects.requireNonNull(elementType, "elementType"));
        if (weights.isEmpty() || weights.size() != biases.size() || widths.size() != weights.size() + 1) {
            throw new IllegalArgumentException("an MLP needs as many biases as weights and one more width");
        }
        for (int l = 0; l < weights.size(); l++) {
            if (weights.get(l).length != widths.get(l + 1) * widths.get(l) || biases.get(l).length != widths.get(l + 1)) {
                throw new IllegalArgumentException("layer " + l + " does not match widths " + widths);
            }
            boolean exact = elementType == ElementType.FLOAT32
                    || (Arrays.equals(weights.get(l), rounded(weights.get(l), elementType))
                            && Arrays.equals(biases.get(l), rounded(biases.get(l), elementType)));
            if (!exact) {
                throw new IllegalArgumentException("layer " + l + " holds values that " + elementType + " cannot "
                        + "represent: round the model with withElementType");
            }
        }
    }

    /** Elements per input row. */
    public int inputWidth() {
        return widths.getFirst();
    }

    /** Elements per output row. */
    public int outputWidth() {
        return widths.getLast();
    }

    /**
     * A deterministic random FP32 model: He-uniform weights, small biases.
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
        return new MlpWeights(weights, biases, widths, ElementType.FLOAT32);
    }

    /**
     * This model in another element type: every weight and bias rounded to it, to nearest, ties to
     * even, as CUDA rounds ({@link HalfFloats}).
     *
     * @param type FLOAT32, FLOAT16 or BFLOAT16; to FLOAT32 the values are kept
     * @return the model in {@code type}
     * @throws IllegalArgumentException for another type
     */
    public MlpWeights withElementType(ElementType type) {
        SafeTensors.dtype(Objects.requireNonNull(type, "type"));
        if (type == ElementType.FLOAT32) {
            return new MlpWeights(weights, biases, widths, type);
        }
        return new MlpWeights(weights.stream().map(w -> rounded(w, type)).toList(),
                biases.stream().map(b -> rounded(b, type)).toList(), widths, type);
    }

    /**
     * Loads a model file.
     *
     * @param file a {@code .safetensors} file with {@code 0.weight}, {@code 0.bias}, {@code 2.weight}, …, all
     *     F32, all F16 or all BF16
     * @return the weights, of the file's element type
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
        return new MlpWeights(weights, biases, widths, tensors.get("0.weight").type());
    }

    /**
     * Writes this model as PyTorch names it, in its element type.
     *
     * @param file the file to write
     * @throws IOException if it cannot be written
     */
    public void save(Path file) throws IOException {
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        for (int l = 0; l < weights.size(); l++) {
            tensors.put(2 * l + ".weight", new SafeTensors.Tensor(List.of(widths.get(l + 1), widths.get(l)),
                    elementType, weights.get(l)));
            tensors.put(2 * l + ".bias", new SafeTensors.Tensor(List.of(widths.get(l + 1)), elementType,
                    biases.get(l)));
        }
        SafeTensors.write(file, tensors, Map.of("format", "pt", "model", "Sequential(Linear, ReLU) x "
                + weights.size()));
    }

    /**
     * The forward pass on the CPU, in float with one fused multiply-add per term, row by row. A
     * half-precision model computes as the GPU does: its input rounded to the format, and each
     * layer's products (exact in float) accumulated in float, its bias added and ReLU applied in
     * float, then its output rounded to the format.
     *
     * @param rows {@code n * inputWidth} floats
     * @return {@code n * outputWidth} floats; for a half-precision model, values of its format
     */
    public float[] forward(float[] rows) {
        boolean half = elementType != ElementType.FLOAT32;
        float[] current = half ? rounded(rows, elementType) : rows;
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
            current = half ? rounded(next, elementType) : next;
        }
        return current;
    }

    /** The values rounded to a 16-bit format and widened back. */
    private static float[] rounded(float[] values, ElementType type) {
        return HalfFloats.toFloats(HalfFloats.fromFloats(values, type), type);
    }

    private static float[] uniform(int length, double bound, SplittableRandom random) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        return values;
    }
}

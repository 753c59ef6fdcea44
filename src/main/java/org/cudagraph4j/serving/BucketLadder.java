package org.cudagraph4j.serving;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The batch sizes an engine keeps a graph for. A batch of {@code n} rows runs on the smallest
 * bucket of at least {@code n} rows, padded with zero rows whose outputs are dropped; a request of
 * more rows than the largest bucket is split into pieces of at most that many rows, served as
 * separate batches and joined again in order.
 *
 * <p>Thread safety: immutable.
 */
public final class BucketLadder {
    private final int[] sizes;

    private BucketLadder(int[] sizes) {
        this.sizes = sizes;
    }

    /**
     * A ladder of the given sizes, in any order.
     *
     * @param sizes batch sizes, each at least 1, no two equal
     * @return the ladder
     * @throws IllegalArgumentException if {@code sizes} is empty, or a size is below 1 or repeated
     */
    public static BucketLadder of(int... sizes) {
        if (sizes.length == 0) {
            throw new IllegalArgumentException("a bucket ladder needs at least one size");
        }
        int[] sorted = sizes.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < sorted.length; i++) {
            if (sorted[i] < 1) {
                throw new IllegalArgumentException("bucket sizes must be at least 1, got " + sorted[i]);
            }
            if (i > 0 && sorted[i] == sorted[i - 1]) {
                throw new IllegalArgumentException("bucket size " + sorted[i] + " is given twice");
            }
        }
        return new BucketLadder(sorted);
    }

    /**
     * vLLM's default capture sizes: 1, 2, 4, 8, then steps of 8 up to {@code largest}.
     *
     * @param largest the largest bucket, at least 8 and a multiple of 8
     * @return the ladder
     * @throws IllegalArgumentException if {@code largest} is below 8 or not a multiple of 8
     */
    public static BucketLadder powersThenStepsOf8(int largest) {
        if (largest < 8 || largest % 8 != 0) {
            throw new IllegalArgumentException("the largest bucket must be a multiple of 8 from 8 up, got " + largest);
        }
        List<Integer> sizes = new ArrayList<>(List.of(1, 2, 4));
        for (int size = 8; size <= largest; size += 8) {
            sizes.add(size);
        }
        return of(sizes.stream().mapToInt(Integer::intValue).toArray());
    }

    /**
     * The default ladder: vLLM's, 1, 2, 4, 8, then steps of 8 to 256 (35 buckets).
     *
     * @return {@code powersThenStepsOf8(256)}
     */
    public static BucketLadder defaultLadder() {
        return powersThenStepsOf8(256);
    }

    /**
     * The bucket a batch of {@code rows} rows runs on.
     *
     * @param rows rows in the batch, 1 to {@link #largest()}
     * @return the smallest bucket of at least {@code rows}
     * @throws IllegalArgumentException if {@code rows} is below 1 or above the largest bucket
     */
    public int bucketFor(int rows) {
        if (rows < 1 || rows > largest()) {
            throw new IllegalArgumentException("a batch has 1 to " + largest() + " rows here, got " + rows);
        }
        int index = Arrays.binarySearch(sizes, rows);
        return sizes[index >= 0 ? index : -index - 1];
    }

    /**
     * The largest bucket: the most rows one batch carries.
     *
     * @return the largest size
     */
    public int largest() {
        return sizes[sizes.length - 1];
    }

    /**
     * Every size, smallest first.
     *
     * @return the sizes
     */
    public List<Integer> sizes() {
        return Arrays.stream(sizes).boxed().toList();
    }

    /**
     * How a request of {@code rows} rows is split: pieces of the largest bucket, then the rest.
     *
     * @param rows rows in the request, at least 1
     * @return the piece sizes, in order; one piece when {@code rows} fits the largest bucket
     * @throws IllegalArgumentException if {@code rows} is below 1
     */
    public List<Integer> pieces(int rows) {
        if (rows < 1) {
            throw new IllegalArgumentException("a request has at least one row, got " + rows);
        }
        List<Integer> pieces = new ArrayList<>();
        for (int left = rows; left > 0; left -= largest()) {
            pieces.add(Math.min(left, largest()));
        }
        return pieces;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof BucketLadder ladder && Arrays.equals(sizes, ladder.sizes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(sizes);
    }

    @Override
    public String toString() {
        return "BucketLadder" + Arrays.toString(sizes);
    }
}

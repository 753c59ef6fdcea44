package org.cudagraph4j.graph;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import org.cudagraph4j.CudaStream;

/**
 * How {@link CudaGraph#instantiate(InstantiateOptions)} makes an executable: the
 * {@code cudaGraphInstantiateFlags}, and the stream to upload it on as part of instantiation.
 * Uploading is the stream, not a flag: a stream given means {@code cudaGraphInstantiateFlagUpload}.
 *
 * <pre>{@code
 * GraphExec exec = graph.instantiate(InstantiateOptions.defaults()
 *         .withUpload(stream)
 *         .with(InstantiateFlag.USE_NODE_PRIORITY));
 * }</pre>
 *
 * <p>Thread safety: immutable.
 *
 * @param flags the flags, {@link InstantiateFlag#UPLOAD} excluded; unmodifiable
 * @param uploadStream the stream the upload is ordered on, or {@code null} to upload at the first launch
 */
public record InstantiateOptions(Set<InstantiateFlag> flags, CudaStream uploadStream) {
    private static final InstantiateOptions DEFAULTS = new InstantiateOptions(Set.of(), null);

    /**
     * Checks and copies the flags.
     *
     * @throws IllegalArgumentException if {@code flags} holds {@link InstantiateFlag#UPLOAD}: give the
     *     stream instead ({@link #withUpload(CudaStream)})
     * @throws NullPointerException if {@code flags} or one of them is null
     */
    public InstantiateOptions {
        if (flags.contains(InstantiateFlag.UPLOAD)) {
            throw new IllegalArgumentException("upload is a stream, not a flag: use withUpload(stream)");
        }
        flags = flags.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(flags));
    }

    /**
     * No flags, no upload: what {@link CudaGraph#instantiate(InstantiateFlag...)} with no flags does.
     *
     * @return the default options
     */
    public static InstantiateOptions defaults() {
        return DEFAULTS;
    }

    /**
     * These options with the executable uploaded on {@code stream} as part of instantiation, so
     * that its first launch does not pay for the upload.
     *
     * @param stream the stream the upload is ordered on
     * @return options that differ from these in their upload stream only
     * @throws NullPointerException if {@code stream} is null
     */
    public InstantiateOptions withUpload(CudaStream stream) {
        return new InstantiateOptions(flags, Objects.requireNonNull(stream, "stream"));
    }

    /**
     * These options with {@code flag} too.
     *
     * @param flag any flag but {@link InstantiateFlag#UPLOAD}
     * @return options that differ from these in their flags only
     * @throws IllegalArgumentException for {@link InstantiateFlag#UPLOAD}: use {@link #withUpload(CudaStream)}
     */
    public InstantiateOptions with(InstantiateFlag flag) {
        EnumSet<InstantiateFlag> more = EnumSet.of(Objects.requireNonNull(flag, "flag"));
        more.addAll(flags);
        return new InstantiateOptions(more, uploadStream);
    }

    /** The options the flag arguments of the older {@code instantiate} overloads stand for, upload apart. */
    static InstantiateOptions of(InstantiateFlag... flags) {
        return new InstantiateOptions(Set.copyOf(Arrays.asList(flags)), null);
    }

    /** The flags as the runtime takes them: UPLOAD stands for the upload stream. */
    InstantiateFlag[] runtimeFlags() {
        EnumSet<InstantiateFlag> all = EnumSet.noneOf(InstantiateFlag.class);
        all.addAll(flags);
        if (uploadStream != null) {
            all.add(InstantiateFlag.UPLOAD);
        }
        return all.toArray(InstantiateFlag[]::new);
    }
}

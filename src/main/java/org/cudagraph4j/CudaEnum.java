package org.cudagraph4j;

import java.util.Optional;

/**
 * A Java enum that stands for a CUDA enumeration: each constant knows the runtime's value for it,
 * and {@link #find(Class, int)} maps a raw value back. The library's enums ({@code CaptureMode},
 * {@code CaptureStatus}, {@code GraphNodeType}, …) all work this way.
 */
public interface CudaEnum {
    /**
     * The runtime's value for this constant.
     *
     * @return the raw value of the CUDA enumerator
     */
    int value();

    /**
     * The constant of {@code type} whose {@link #value()} is {@code value}.
     *
     * @param <E> the enum
     * @param type the enum's class
     * @param value a raw value of the CUDA enumeration
     * @return the constant, or empty for a value the enum does not list
     */
    static <E extends Enum<E> & CudaEnum> Optional<E> find(Class<E> type, int value) {
        return Optional.ofNullable(type.cast(CudaEnumValues.TABLES.get(type).get(value)));
    }
}

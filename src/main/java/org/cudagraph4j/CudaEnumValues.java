package org.cudagraph4j;

import java.util.HashMap;
import java.util.Map;

/** {@link CudaEnum#find}'s value-to-constant table per enum class, built on first use. */
final class CudaEnumValues {
    static final ClassValue<Map<Integer, Object>> TABLES = new ClassValue<>() {
        @Override
        protected Map<Integer, Object> computeValue(Class<?> type) {
            Map<Integer, Object> table = new HashMap<>();
            for (Object constant : type.getEnumConstants()) {
                table.put(((CudaEnum) constant).value(), constant);
            }
            return Map.copyOf(table);
        }
    };

    private CudaEnumValues() {}
}

package org.cudagraph4j.graph;

import java.util.Locale;

/** CUDA's names for the constants of this package's enums, which spell them in Java's style. */
final class RuntimeNames {
    private RuntimeNames() {}

    /**
     * The CUDA enumerator {@code prefix} followed by {@code constant}'s name in camel case:
     * {@code INVALID_STRUCTURE} after {@code cudaGraphInstantiate} is {@code cudaGraphInstantiateInvalidStructure}.
     */
    static String enumerator(String prefix, Enum<?> constant) {
        StringBuilder name = new StringBuilder(prefix);
        for (String word : constant.name().split("_")) {
            name.append(word.charAt(0)).append(word.substring(1).toLowerCase(Locale.ROOT));
        }
        return name.toString();
    }
}

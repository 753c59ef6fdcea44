package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.EnumSet;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class InstantiateOptionsTest {
    @Test
    void theDefaultsHaveNoFlagsAndNoUpload() {
        InstantiateOptions defaults = InstantiateOptions.defaults();
        assertEquals(Set.of(), defaults.flags());
        assertNull(defaults.uploadStream());
        assertArrayEquals(new InstantiateFlag[0], defaults.runtimeFlags());
    }

    @Test
    void flagsAddUpAndTheOriginalStaysAsItWas() {
        InstantiateOptions priority = InstantiateOptions.defaults().with(InstantiateFlag.USE_NODE_PRIORITY);
        InstantiateOptions both = priority.with(InstantiateFlag.AUTO_FREE_ON_LAUNCH);
        assertEquals(Set.of(InstantiateFlag.USE_NODE_PRIORITY), priority.flags());
        assertEquals(Set.of(InstantiateFlag.USE_NODE_PRIORITY, InstantiateFlag.AUTO_FREE_ON_LAUNCH), both.flags());
        assertArrayEquals(new InstantiateFlag[] {InstantiateFlag.AUTO_FREE_ON_LAUNCH, InstantiateFlag.USE_NODE_PRIORITY},
                both.runtimeFlags(), "in the flags' order, without UPLOAD while there is no stream");
        assertEquals(priority, priority.with(InstantiateFlag.USE_NODE_PRIORITY), "a flag given twice is one flag");
    }

    @Test
    void uploadIsAStreamNotAFlag() {
        IllegalArgumentException with = assertThrows(IllegalArgumentException.class,
                () -> InstantiateOptions.defaults().with(InstantiateFlag.UPLOAD));
        assertEquals("upload is a stream, not a flag: use withUpload(stream)", with.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new InstantiateOptions(EnumSet.of(InstantiateFlag.UPLOAD), null));
        assertThrows(IllegalArgumentException.class, () -> InstantiateOptions.of(InstantiateFlag.UPLOAD));
        assertThrows(NullPointerException.class, () -> InstantiateOptions.defaults().withUpload(null));
        assertThrows(NullPointerException.class, () -> InstantiateOptions.defaults().with(null));
    }

    @Test
    void theFlagsAreCopiedAndUnmodifiable() {
        Set<InstantiateFlag> given = new HashSet<>(Set.of(InstantiateFlag.DEVICE_LAUNCH));
        InstantiateOptions options = new InstantiateOptions(given, null);
        given.add(InstantiateFlag.USE_NODE_PRIORITY);
        assertEquals(Set.of(InstantiateFlag.DEVICE_LAUNCH), options.flags());
        assertThrows(UnsupportedOperationException.class, () -> options.flags().add(InstantiateFlag.USE_NODE_PRIORITY));
        assertEquals(options, InstantiateOptions.of(InstantiateFlag.DEVICE_LAUNCH));
    }
}

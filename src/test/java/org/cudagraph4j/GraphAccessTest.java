package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.InputStream;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class GraphAccessTest {
    /** Asks for the access from whatever module its class is in. */
    public static final class Asker implements Supplier<GraphAccess> {
        @Override
        public GraphAccess get() {
            return GraphAccess.get();
        }
    }

    @Test
    void theLibrarysOwnModuleGetsIt() {
        assertNotNull(new Asker().get());
    }

    @Test
    void anotherModuleIsRefused() throws Exception {
        // Each class loader has its own unnamed module: defined by another, the asker is outside the library's.
        Supplier<?> outsider = (Supplier<?>) new Isolating().define(Asker.class).getConstructor().newInstance();

        assertThrows(IllegalCallerException.class, outsider::get);
    }

    /** Defines one class itself and leaves the rest to the class path's loader. */
    private static final class Isolating extends ClassLoader {
        Isolating() {
            super(GraphAccessTest.class.getClassLoader());
        }

        Class<?> define(Class<?> type) throws Exception {
            String file = type.getName().substring(type.getPackageName().length() + 1) + ".class";
            try (InputStream in = type.getResourceAsStream(file)) {
                byte[] bytes = in.readAllBytes();
                return defineClass(type.getName(), bytes, 0, bytes.length);
            }
        }
    }
}

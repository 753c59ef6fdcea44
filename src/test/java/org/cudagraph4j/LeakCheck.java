package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that ends with more native resources alive than it started with (streams, events,
 * buffers and their bytes, libraries, graphs, executables, prepared arguments), as cuda.core's
 * tests do: a resource leaked by one test must not pass unnoticed. Runs after {@code @AfterEach}.
 */
public final class LeakCheck implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(LeakCheck.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NAMESPACE).put("before", Cuda.liveResources());
    }

    /** Whether LeakCheck has counted the live resources before the test that {@code context} runs. */
    static boolean counted(ExtensionContext context) {
        return context.getStore(NAMESPACE).get("before", LiveResources.class) != null;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        LiveResources before = context.getStore(NAMESPACE).get("before", LiveResources.class);
        String growth = Cuda.liveResources().growthSince(before);
        if (!growth.isEmpty()) {
            fail(context.getDisplayName() + " leaked: " + growth);
        }
    }
}

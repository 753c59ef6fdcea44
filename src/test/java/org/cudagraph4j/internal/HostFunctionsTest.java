package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.junit.jupiter.api.Test;

/**
 * The upcall stub as CUDA calls it, from a native frame, with no GPU: whatever the callback throws
 * stays on the Java side, kept for the stream it reported to; a CUDA call from inside is refused;
 * and a registration lives exactly as long as something can still call it.
 */
class HostFunctionsTest {
    private static final MemorySegment STREAM = MemorySegment.ofAddress(0x5eed_0001L);
    private static final MethodHandle CALL_STUB = callStub();

    @SuppressWarnings("restricted") // calling the stub as CUDA's host thread would
    private static MethodHandle callStub() {
        return Linker.nativeLinker().downcallHandle(HostFunctions.stub(), FunctionDescriptor.ofVoid(ADDRESS));
    }

    private static void callAsCuda(MemorySegment userData) throws Throwable {
        CALL_STUB.invokeExact(userData);
    }

    @Test
    void exceptionsAndErrorsNeverCrossTheNativeFrameAndComeBackForTheirStream() throws Throwable {
        HostFunctions.Registration failing = HostFunctions.forGraph(() -> {
            throw new IllegalStateException("first");
        }, "failing");
        HostFunctions.Registration erring = HostFunctions.forGraph(() -> {
            throw new StackOverflowError("second");
        }, "erring");
        try {
            failing.reportTo(STREAM);
            erring.reportTo(STREAM);
            callAsCuda(failing.userData());
            callAsCuda(erring.userData());
            Throwable failure = HostFunctions.takeFailure(STREAM);
            assertInstanceOf(IllegalStateException.class, failure);
            assertEquals("first", failure.getMessage());
            assertInstanceOf(StackOverflowError.class, failure.getSuppressed()[0]);
            assertNull(HostFunctions.takeFailure(STREAM), "taken once");
        } finally {
            failing.lifetime().close();
            erring.lifetime().close();
        }
    }

    @Test
    void aCudaCallFromInsideACallbackIsRefusedAndOutsideItIsNot() throws Throwable {
        AtomicReference<Throwable> refused = new AtomicReference<>();
        HostFunctions.Registration registration = HostFunctions.forGraph(() -> {
            try {
                Status.check(Status.SUCCESS, "cudaMemcpy");
            } catch (IllegalStateException e) {
                refused.set(e);
            }
        }, "calls CUDA");
        try {
            callAsCuda(registration.userData());
        } finally {
            registration.lifetime().close();
        }
        assertTrue(refused.get().getMessage().startsWith("cudaMemcpy was called from inside a host function"),
                refused.get().getMessage());
        HostFunctions.refuseInCallback("cudaMemcpy"); // this thread is not in a callback
    }

    @Test
    void aRegistrationLivesWhileHeldAndACallAfterItIsGoneDoesNothing() throws Throwable {
        AtomicInteger calls = new AtomicInteger();
        int before = HostFunctions.registered();
        HostFunctions.Registration registration = HostFunctions.forGraph(calls::incrementAndGet, "counted");
        Lifetime lifetime = registration.lifetime();
        assertSame(registration, HostFunctions.of(lifetime));
        lifetime.retain(); // a graph holds it
        lifetime.close(); // its owner lets go
        callAsCuda(registration.userData());
        callAsCuda(registration.userData());
        assertEquals(2, calls.get());
        assertEquals(before + 1, HostFunctions.registered());
        lifetime.release(); // the last graph or executable closes
        assertEquals(before, HostFunctions.registered());
        assertNull(HostFunctions.of(lifetime));
        callAsCuda(registration.userData());
        assertEquals(2, calls.get(), "a call after the last holder closed finds nothing to run");
    }
}

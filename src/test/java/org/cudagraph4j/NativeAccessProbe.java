package org.cudagraph4j;

/** Run by {@link NativeAccessTest} in a child JVM that denies native access: prints what the library says. */
public final class NativeAccessProbe {
    private NativeAccessProbe() {}

    public static void main(String[] args) {
        try {
            System.out.println("runtime " + Cuda.runtimeVersion());
        } catch (RuntimeException e) {
            System.out.println(e.getClass().getName() + ": " + e.getMessage());
        }
    }
}

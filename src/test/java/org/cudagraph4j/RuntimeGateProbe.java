package org.cudagraph4j;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.cudagraph4j.cudart.cudart_h;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;

/**
 * Run by {@link RuntimeGateTest} in a child JVM started with a runtime path that does not exist.
 * First it calls every public static method and public constructor of the exported packages, with
 * nulls, zeros and empty arrays, which the gate must stop before any binding resolves a symbol.
 * Then it points the property at the real runtime (a corrected property lets a later call succeed)
 * and initializes every function holder of the bindings: one that a call before the gate reached
 * failed its initialization, and fails again now. Prints one line per finding; exits 1 if any.
 *
 * <p>Arguments: the real runtime's path, then optionally {@code --call-a-binding-first}, which calls
 * one binding before the gate to show that the probe catches it.
 */
public final class RuntimeGateProbe {
    private static final List<String> EXPORTED = List.of("org.cudagraph4j", "org.cudagraph4j.graph",
            "org.cudagraph4j.kernels", "org.cudagraph4j.serving", "org.cudagraph4j.llm");

    private RuntimeGateProbe() {}

    public static void main(String[] args) throws Exception {
        List<String> findings = new ArrayList<>();
        if (args.length > 1 && args[1].equals("--call-a-binding-first")) {
            try {
                cudart_h.cudaGetDeviceCount(java.lang.foreign.MemorySegment.NULL);
            } catch (Throwable expected) {
                System.out.println("called cudaGetDeviceCount before the gate: " + expected);
            }
        }
        int gated = 0;
        int calls = 0;
        for (Class<?> type : exportedClasses()) {
            List<Executable> members = new ArrayList<>();
            for (Method method : type.getDeclaredMethods()) {
                if (Modifier.isPublic(method.getModifiers()) && Modifier.isStatic(method.getModifiers())) {
                    members.add(method);
                }
            }
            if (!Modifier.isAbstract(type.getModifiers())) {
                for (Constructor<?> constructor : type.getDeclaredConstructors()) {
                    if (Modifier.isPublic(constructor.getModifiers())) {
                        members.add(constructor);
                    }
                }
            }
            for (Executable member : members) {
                calls++;
                Throwable outcome = call(member);
                if (outcome instanceof CudaRuntimeNotFoundException) {
                    gated++;
                } else if (outcome instanceof LinkageError) {
                    findings.add("passed the gate: " + member + " threw " + outcome);
                }
            }
        }
        System.out.println(calls + " public entry points called, " + gated + " stopped at the gate");
        if (gated == 0) {
            findings.add("no call reached the gate: is the runtime path really missing?");
        }

        System.setProperty("org.cudagraph4j.cudart.path", args[0]);
        System.out.println("runtime " + Cuda.runtimeVersion() + " after correcting the path");
        int holders = 0;
        for (Class<?> nested : cudart_h.class.getDeclaredClasses()) {
            try {
                Class.forName(nested.getName(), true, cudart_h.class.getClassLoader());
                holders++;
            } catch (LinkageError e) {
                findings.add("binding broken for the life of the JVM: " + nested.getName() + ": " + e);
            }
        }
        System.out.println(holders + " function holders initialize");
        findings.forEach(finding -> System.out.println("FINDING " + finding));
        System.exit(findings.isEmpty() ? 0 : 1);
    }

    private static Throwable call(Executable member) {
        Object[] arguments = new Object[member.getParameterCount()];
        Class<?>[] types = member.getParameterTypes();
        for (int i = 0; i < arguments.length; i++) {
            arguments[i] = defaultValue(types[i]);
        }
        try {
            if (member instanceof Method method) {
                method.invoke(null, arguments);
            } else {
                ((Constructor<?>) member).newInstance(arguments);
            }
            return null;
        } catch (InvocationTargetException e) {
            return e.getCause();
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return e;
        }
    }

    private static Object defaultValue(Class<?> type) {
        if (type.isArray()) {
            return java.lang.reflect.Array.newInstance(type.getComponentType(), 0);
        }
        if (!type.isPrimitive()) {
            return null;
        }
        return switch (type.getName()) {
            case "boolean" -> false;
            case "char" -> '\0';
            case "byte" -> (byte) 0;
            case "short" -> (short) 0;
            case "int" -> 0;
            case "long" -> 0L;
            case "float" -> 0f;
            default -> 0d;
        };
    }

    /** Every public class of the exported packages, nested ones included, from the library's classes. */
    private static List<Class<?>> exportedClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path location = Path.of(CudaLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        // target/classes under Maven, the library's jar in the GPU bundle.
        Path root = Files.isDirectory(location) ? location
                : FileSystems.newFileSystem(location).getRootDirectories().iterator().next();
        TreeSet<String> names = new TreeSet<>();
        for (String pkg : EXPORTED) {
            Path folder = root.resolve(pkg.replace('.', '/'));
            try (Stream<Path> files = Files.list(folder)) {
                files.map(file -> file.getFileName().toString())
                        .filter(file -> file.endsWith(".class") && !file.equals("package-info.class"))
                        .forEach(file -> names.add(pkg + "." + file.substring(0, file.length() - ".class".length())));
            }
        }
        List<Class<?>> classes = new ArrayList<>();
        for (String name : names) {
            Class<?> type = Class.forName(name, false, RuntimeGateProbe.class.getClassLoader());
            if (Modifier.isPublic(type.getModifiers()) && !type.isSynthetic() && !type.isAnonymousClass()) {
                classes.add(type);
            }
        }
        return classes;
    }
}

package org.cudagraph4j.benchmarks;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * Writes a report's chart where this runtime can draw one. The charts are drawn with XChart, which
 * needs {@code java.desktop}; the GPU bundle's jlinked runtime leaves that module out, so there a
 * report writes its tables only and says how to draw the chart on a full JDK. This class touches no
 * AWT type, and the chart classes are reached only through the supplier, so the reports load and
 * run without {@code java.desktop}.
 */
public final class Charts {
    private Charts() {}

    /**
     * Whether this runtime has {@code java.desktop}. Where it has, AWT is made headless first: the
     * reports run on hosts without a display, and the property must be set before AWT starts.
     *
     * @return true where charts can be drawn
     */
    public static boolean drawable() {
        if (ModuleLayer.boot().findModule("java.desktop").isEmpty()) {
            return false;
        }
        System.setProperty("java.awt.headless", "true");
        return true;
    }

    /**
     * Writes {@code svg}'s chart to {@code file} where this runtime can draw it, else prints one
     * line that says it was not drawn and the command that draws it, from {@code file}'s folder.
     *
     * @param file the chart to write
     * @param svg draws the chart; called only where this runtime can
     * @param main the report's main class, which draws the chart when run again
     * @param arguments {@code main}'s arguments, as they read from {@code file}'s folder
     * @throws IOException if the chart cannot be written
     */
    public static void write(Path file, Supplier<String> svg, Class<?> main, String... arguments) throws IOException {
        if (drawable()) {
            Files.writeString(file, svg.get());
            return;
        }
        System.err.println(notDrawn(file, main, arguments));
    }

    /** {@return the line that says {@code file} was not drawn, and the command that draws it} */
    static String notDrawn(Path file, Class<?> main, String... arguments) {
        return main.getSimpleName() + ": " + file.getFileName() + " not drawn: this Java runtime has no java.desktop "
                + "module (the GPU bundle's leaves it out). To draw it, run in " + file.toAbsolutePath().getParent()
                + " on a JDK 22+: java -cp " + jar(main) + " " + main.getName() + " " + String.join(" ", arguments);
    }

    /** The jar (or class folder) {@code main} was loaded from. */
    private static String jar(Class<?> main) {
        URL location = main.getProtectionDomain().getCodeSource().getLocation();
        try {
            return Path.of(location.toURI()).toString();
        } catch (URISyntaxException e) {
            return location.toString();
        }
    }
}

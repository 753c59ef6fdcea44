package org.cudagraph4j.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.cudagraph4j.kernels.ShippedKernels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Writes the shipped kernels' cubins and their manifest, as the library's jar holds them, into a
 * folder for the native harness, so that the GPU bundle carries them once (inside the jar).
 *
 * <pre>
 *   ExtractKernels --to DIR
 * </pre>
 */
@Command(name = "ExtractKernels", mixinStandardHelpOptions = true,
        description = "Writes the shipped kernels' cubins and manifest.properties into a folder.")
public final class ExtractKernels implements Callable<Integer> {
    private static final String PREFIX = "org/cudagraph4j/kernels/";

    @Option(names = "--to", required = true, description = "the folder, created if missing")
    Path to;

    public static void main(String[] args) {
        System.exit(Cli.execute(new ExtractKernels(), args));
    }

    @Override
    public Integer call() throws IOException, URISyntaxException {
        Path jar = Path.of(ShippedKernels.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Files.createDirectories(to);
        int written = 0;
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            for (ZipEntry entry : zip.stream().toList()) {
                String name = entry.getName();
                if (!name.startsWith(PREFIX) || name.indexOf('/', PREFIX.length()) >= 0) {
                    continue;
                }
                String file = name.substring(PREFIX.length());
                if (file.endsWith(".cubin") || file.equals("manifest.properties")) {
                    try (InputStream in = zip.getInputStream(entry)) {
                        Files.copy(in, to.resolve(file), StandardCopyOption.REPLACE_EXISTING);
                    }
                    written++;
                }
            }
        }
        if (written == 0) {
            System.err.println("ExtractKernels: " + jar + " holds no shipped kernels");
            return 1;
        }
        return 0;
    }
}

package org.cudagraph4j.benchmarks;

import picocli.CommandLine;

/**
 * How every program of the benchmarks parses its command line, with picocli: {@code --help} on
 * the standard output and exit 0; an unknown or invalid option one line on the standard error,
 * naming it, and exit 2.
 */
public final class Cli {
    private Cli() {}

    /**
     * Parses {@code args} into {@code command} (a picocli {@code @Command}) and runs it.
     *
     * @param command the program's options and its {@code call()}
     * @param args the command line
     * @return the exit status: the program's, 0 after {@code --help}, 2 for a bad command line
     */
    public static int execute(Object command, String... args) {
        CommandLine line = new CommandLine(command);
        line.setParameterExceptionHandler((e, ignored) -> {
            CommandLine failed = e.getCommandLine();
            failed.getErr().println(failed.getCommandName() + ": " + e.getMessage() + " (--help lists the options)");
            return 2;
        });
        return line.execute(args);
    }
}

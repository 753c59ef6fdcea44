package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * What a logger (and every logger below it) logs while a test runs, kept for the test to assert on
 * rather than printed: for tests whose behaviour under test is a log record, such as the warning
 * for a failure they provoke. The library logs through {@link System.Logger}, which the JDK backs
 * with {@code java.util.logging}. Open it in try-with-resources, before what logs; closing it gives
 * the logger back its level and its parent handlers.
 */
public final class LogCapture implements AutoCloseable {
    /**
     * A record logged at {@code WARNING} or {@code ERROR}.
     *
     * @param level the level the library logged it at
     * @param message its message, before any parameters are filled in
     * @param thrown the failure it carries, or null
     */
    public record Warning(System.Logger.Level level, String message, Throwable thrown) {}

    private final Logger logger;
    private final Level level;
    private final boolean useParentHandlers;
    private final List<Warning> warnings = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            // System.Logger's ERROR is java.util.logging's SEVERE.
            if (record.getLevel().intValue() >= Level.SEVERE.intValue()) {
                warnings.add(new Warning(System.Logger.Level.ERROR, record.getMessage(), record.getThrown()));
            } else if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                warnings.add(new Warning(System.Logger.Level.WARNING, record.getMessage(), record.getThrown()));
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    private LogCapture(String name) {
        logger = Logger.getLogger(name);
        level = logger.getLevel();
        useParentHandlers = logger.getUseParentHandlers();
        logger.setLevel(Level.ALL);
        logger.setUseParentHandlers(false);
        logger.addHandler(handler);
    }

    /** Captures what the logger named {@code name} logs, and what those below it log, until closed. */
    public static LogCapture of(String name) {
        return new LogCapture(name);
    }

    /** The records logged so far at {@code WARNING} or {@code ERROR}, oldest first. */
    public List<Warning> warnings() {
        return List.copyOf(warnings);
    }

    /** The one record logged so far at {@code WARNING} or {@code ERROR}; fails the test if there is none, or more. */
    public Warning onlyWarning() {
        List<Warning> logged = warnings();
        assertEquals(1, logged.size(), () -> "warnings logged: " + logged);
        return logged.getFirst();
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setUseParentHandlers(useParentHandlers);
        logger.setLevel(level);
    }
}

package org.cudagraph4j;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a test class that needs a CUDA device. {@code mvn test} leaves these out (tag {@code gpu});
 * the GPU bundle runs them, and they fail, rather than skip, where no device is present. Each test
 * also fails if it leaves more native resources alive than it found ({@link LeakCheck}).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag("gpu")
@ExtendWith({RequireDevice.class, LeakCheck.class})
public @interface GpuTest {}

package org.cudagraph4j;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test that takes long by design (tag {@value #TAG}): a soak, a load of tens of thousands of
 * requests, a fuzz over thousands of images. {@code bin/run-tests} leaves these out unless given
 * {@code --long}, so that the default run of the GPU bundle stays within about two minutes on an H200;
 * {@code mvn test} still runs the ones that need no GPU.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(LongRunning.TAG)
public @interface LongRunning {
    /** The tag {@code bin/run-tests} leaves out by default. */
    String TAG = "long";
}

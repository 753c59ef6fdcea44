package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class DemanglerTest {
    @Test
    void nestedTemplateKernelName() {
        assertEquals("cublasLt::epilogue::impl::globalKernel<8, 32, float>",
                Demangler.demangle("_ZN8cublasLt8epilogue4impl12globalKernelILi8ELi32EfEEvPKfPf"));
    }

    @Test
    void plainFunctionName() {
        assertEquals("saxpy", Demangler.demangle("_Z5saxpyifPKfPf"));
    }

    @Test
    void externCNamesAreUnchanged() {
        assertEquals("write_pattern", Demangler.demangle("write_pattern"));
    }

    @Test
    void unsupportedManglingIsLeftAsIs() {
        String lambda = "_ZZ4mainENKUlvE_clEv";
        assertEquals(lambda, Demangler.demangle(lambda));
    }
}

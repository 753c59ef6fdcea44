package org.cudagraph4j.benchmarks.server;

import org.cudagraph4j.ElementType;

/** A backend that serves one {@link MlpWeights} model: its element type and row widths are the model's. */
abstract class MlpBackend implements InferenceBackend {
    final MlpWeights model;

    MlpBackend(MlpWeights model) {
        this.model = model;
    }

    @Override
    public ElementType elementType() {
        return model.elementType();
    }

    @Override
    public int inputWidth() {
        return model.inputWidth();
    }

    @Override
    public int outputWidth() {
        return model.outputWidth();
    }
}

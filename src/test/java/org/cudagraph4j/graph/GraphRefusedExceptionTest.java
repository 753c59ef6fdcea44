package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;

/** A refused instantiation or update names the runtime's reason and keeps it typed through serialization. */
class GraphRefusedExceptionTest {
    private static final CudaException FAILED_UPDATE = new CudaException("cudaGraphExecUpdate",
            CudaError.GRAPH_EXEC_UPDATE_FAILURE.code(), "cudaErrorGraphExecUpdateFailure", "the update was refused",
            null);

    @Test
    void updateRefusalNamesItsReasonAndKeepsTheCause() {
        GraphUpdateException e = new GraphUpdateException(FAILED_UPDATE, UpdateResult.TOPOLOGY_CHANGED, null, null);
        assertSame(UpdateResult.TOPOLOGY_CHANGED, e.result());
        assertTrue(e.node().isEmpty());
        assertTrue(e.edgeFrom().isEmpty());
        assertTrue(e.getMessage().contains("cudaGraphExecUpdateErrorTopologyChanged"), e.getMessage());
        assertSame(FAILED_UPDATE, e.getCause());
        assertEquals(CudaError.GRAPH_EXEC_UPDATE_FAILURE, e.error());
    }

    @Test
    void instantiateRefusalSurvivesSerializationWithItsReason() throws Exception {
        GraphInstantiateException e = new GraphInstantiateException(FAILED_UPDATE, InstantiateResult.INVALID_STRUCTURE,
                null);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(e);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            GraphInstantiateException copy = (GraphInstantiateException) in.readObject();
            assertSame(InstantiateResult.INVALID_STRUCTURE, copy.result());
            assertEquals(e.getMessage(), copy.getMessage());
        }
    }
}

package io.rdma4j.dl4j;

import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What attaching promises about the network's arrays, in a one-rank world in this JVM. */
class DataParallelAttachTest {

    /**
     * A network that gets a new gradient array after attaching (initGradientsView again) would
     * train on gradients nobody averages while the attached array is averaged: refused instead.
     */
    @Test
    void aGradientArrayTheNetworkReplacedIsRefusedNotLeftUnaveraged() {
        try (LocalGroup g = LocalGroup.start(1, LocalGroup.config(TransportConfig.Provider.TCP));
             Communicator comm = Communicator.builder().transport(g.transport(0)).store(g.store(0))
                     .options(CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(10))).build()) {
            MultiLayerNetwork net = (MultiLayerNetwork) TinyNetworks.build("mlp", DataType.FLOAT, "sgd", 1);
            try (DataParallel dp = DataParallel.attach(comm, net)) {
                net.fit(TinyNetworks.globalBatch(0, 8, DataType.FLOAT)); // the attached array: fine
                net.initGradientsView();
                RuntimeException e = assertThrows(RuntimeException.class,
                        () -> net.fit(TinyNetworks.globalBatch(1, 8, DataType.FLOAT)));
                String all = e + " " + e.getCause();
                assertTrue(all.contains("gradients array was replaced"), all);
            }
        }
    }
}

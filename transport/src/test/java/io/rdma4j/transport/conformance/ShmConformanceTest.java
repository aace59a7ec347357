package io.rdma4j.transport.conformance;

import io.rdma4j.transport.TransportConfig;

class ShmConformanceTest extends TransportConformanceTest {
    @Override
    protected TransportConfig.Provider provider() {
        return TransportConfig.Provider.SHM;
    }
}

package io.rdma4j.transport.conformance;

import io.rdma4j.transport.TransportConfig;

class TcpConformanceTest extends TransportConformanceTest {
    @Override
    protected TransportConfig.Provider provider() {
        return TransportConfig.Provider.TCP;
    }
}

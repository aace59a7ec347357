package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.*;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Compares every struct size, field offset and field size the safe layer relies on with what gcc
 * computes from the installed rdma-core headers. The C program is generated from {@link #checks()},
 * the single list of (struct, member) pairs, so Java and C cannot drift apart.
 */
class NativeLayoutTest {

    /** One sizeof or offsetof/field-size comparison; {@code member} null means the whole struct. */
    record Check(String type, String member, long javaOffset, long javaSize) {
        String label() {
            return member == null ? "sizeof(" + type + ")" : type + "." + member;
        }

        String cExpression() {
            if (member == null) {
                return "printf(\"%zu %zu\\n\", (size_t) 0, sizeof(" + type + "));";
            }
            return "printf(\"%zu %zu\\n\", offsetof(" + type + ", " + member + "), sizeof(((" + type + " *) 0)->"
                    + member + "));";
        }
    }

    static Check size(String type, long size) {
        return new Check(type, null, 0, size);
    }

    static Check field(String type, String member, long offset, MemoryLayout layout) {
        return new Check(type, member, offset, layout.byteSize());
    }

    static List<Check> checks() {
        List<Check> c = new ArrayList<>();
        String ctx = "struct ibv_context";
        c.add(size(ctx, ibv_context.sizeof()));
        c.add(field(ctx, "ops", ibv_context.ops$offset(), ibv_context.ops$layout()));
        c.add(field(ctx, "num_comp_vectors", ibv_context.num_comp_vectors$offset(), ibv_context.num_comp_vectors$layout()));
        c.add(field(ctx, "abi_compat", ibv_context.abi_compat$offset(), ibv_context.abi_compat$layout()));
        String ops = "struct ibv_context_ops";
        c.add(size(ops, ibv_context_ops.sizeof()));
        c.add(field(ops, "post_send", ibv_context_ops.post_send$offset(), ibv_context_ops.post_send$layout()));
        c.add(field(ops, "post_recv", ibv_context_ops.post_recv$offset(), ibv_context_ops.post_recv$layout()));
        c.add(field(ops, "poll_cq", ibv_context_ops.poll_cq$offset(), ibv_context_ops.poll_cq$layout()));
        c.add(field(ops, "req_notify_cq", ibv_context_ops.req_notify_cq$offset(), ibv_context_ops.req_notify_cq$layout()));
        // container_of(ctx, struct verbs_context, context) and the grows-up op table
        String vc = "struct verbs_context";
        c.add(size(vc, verbs_context.sizeof()));
        c.add(field(vc, "context", verbs_context.context$offset(), verbs_context.context$layout()));
        c.add(field(vc, "sz", verbs_context.sz$offset(), verbs_context.sz$layout()));
        c.add(field(vc, "query_port", verbs_context.query_port$offset(), verbs_context.query_port$layout()));

        String da = "struct ibv_device_attr";
        c.add(size(da, ibv_device_attr.sizeof()));
        c.add(field(da, "fw_ver", ibv_device_attr.fw_ver$offset(), ibv_device_attr.fw_ver$layout()));
        c.add(field(da, "node_guid", ibv_device_attr.node_guid$offset(), ibv_device_attr.node_guid$layout()));
        c.add(field(da, "max_mr_size", ibv_device_attr.max_mr_size$offset(), ibv_device_attr.max_mr_size$layout()));
        c.add(field(da, "page_size_cap", ibv_device_attr.page_size_cap$offset(), ibv_device_attr.page_size_cap$layout()));
        c.add(field(da, "vendor_id", ibv_device_attr.vendor_id$offset(), ibv_device_attr.vendor_id$layout()));
        c.add(field(da, "vendor_part_id", ibv_device_attr.vendor_part_id$offset(), ibv_device_attr.vendor_part_id$layout()));
        c.add(field(da, "hw_ver", ibv_device_attr.hw_ver$offset(), ibv_device_attr.hw_ver$layout()));
        c.add(field(da, "max_qp", ibv_device_attr.max_qp$offset(), ibv_device_attr.max_qp$layout()));
        c.add(field(da, "max_qp_wr", ibv_device_attr.max_qp_wr$offset(), ibv_device_attr.max_qp_wr$layout()));
        c.add(field(da, "device_cap_flags", ibv_device_attr.device_cap_flags$offset(), ibv_device_attr.device_cap_flags$layout()));
        c.add(field(da, "max_sge", ibv_device_attr.max_sge$offset(), ibv_device_attr.max_sge$layout()));
        c.add(field(da, "max_sge_rd", ibv_device_attr.max_sge_rd$offset(), ibv_device_attr.max_sge_rd$layout()));
        c.add(field(da, "max_cq", ibv_device_attr.max_cq$offset(), ibv_device_attr.max_cq$layout()));
        c.add(field(da, "max_cqe", ibv_device_attr.max_cqe$offset(), ibv_device_attr.max_cqe$layout()));
        c.add(field(da, "max_mr", ibv_device_attr.max_mr$offset(), ibv_device_attr.max_mr$layout()));
        c.add(field(da, "max_pd", ibv_device_attr.max_pd$offset(), ibv_device_attr.max_pd$layout()));
        c.add(field(da, "max_qp_rd_atom", ibv_device_attr.max_qp_rd_atom$offset(), ibv_device_attr.max_qp_rd_atom$layout()));
        c.add(field(da, "max_qp_init_rd_atom", ibv_device_attr.max_qp_init_rd_atom$offset(), ibv_device_attr.max_qp_init_rd_atom$layout()));
        c.add(field(da, "max_res_rd_atom", ibv_device_attr.max_res_rd_atom$offset(), ibv_device_attr.max_res_rd_atom$layout()));
        c.add(field(da, "atomic_cap", ibv_device_attr.atomic_cap$offset(), ibv_device_attr.atomic_cap$layout()));
        c.add(field(da, "max_ah", ibv_device_attr.max_ah$offset(), ibv_device_attr.max_ah$layout()));
        c.add(field(da, "max_srq", ibv_device_attr.max_srq$offset(), ibv_device_attr.max_srq$layout()));
        c.add(field(da, "max_pkeys", ibv_device_attr.max_pkeys$offset(), ibv_device_attr.max_pkeys$layout()));
        c.add(field(da, "phys_port_cnt", ibv_device_attr.phys_port_cnt$offset(), ibv_device_attr.phys_port_cnt$layout()));

        String pa = "struct ibv_port_attr";
        c.add(size(pa, ibv_port_attr.sizeof()));
        c.add(field(pa, "state", ibv_port_attr.state$offset(), ibv_port_attr.state$layout()));
        c.add(field(pa, "max_mtu", ibv_port_attr.max_mtu$offset(), ibv_port_attr.max_mtu$layout()));
        c.add(field(pa, "active_mtu", ibv_port_attr.active_mtu$offset(), ibv_port_attr.active_mtu$layout()));
        c.add(field(pa, "gid_tbl_len", ibv_port_attr.gid_tbl_len$offset(), ibv_port_attr.gid_tbl_len$layout()));
        c.add(field(pa, "port_cap_flags", ibv_port_attr.port_cap_flags$offset(), ibv_port_attr.port_cap_flags$layout()));
        c.add(field(pa, "max_msg_sz", ibv_port_attr.max_msg_sz$offset(), ibv_port_attr.max_msg_sz$layout()));
        c.add(field(pa, "lid", ibv_port_attr.lid$offset(), ibv_port_attr.lid$layout()));
        c.add(field(pa, "sm_lid", ibv_port_attr.sm_lid$offset(), ibv_port_attr.sm_lid$layout()));
        c.add(field(pa, "active_width", ibv_port_attr.active_width$offset(), ibv_port_attr.active_width$layout()));
        c.add(field(pa, "active_speed", ibv_port_attr.active_speed$offset(), ibv_port_attr.active_speed$layout()));
        c.add(field(pa, "phys_state", ibv_port_attr.phys_state$offset(), ibv_port_attr.phys_state$layout()));
        c.add(field(pa, "link_layer", ibv_port_attr.link_layer$offset(), ibv_port_attr.link_layer$layout()));

        String ge = "struct ibv_gid_entry";
        c.add(size(ge, ibv_gid_entry.sizeof()));
        c.add(field(ge, "gid", ibv_gid_entry.gid$offset(), ibv_gid_entry.gid$layout()));
        c.add(field(ge, "gid_index", ibv_gid_entry.gid_index$offset(), ibv_gid_entry.gid_index$layout()));
        c.add(field(ge, "port_num", ibv_gid_entry.port_num$offset(), ibv_gid_entry.port_num$layout()));
        c.add(field(ge, "gid_type", ibv_gid_entry.gid_type$offset(), ibv_gid_entry.gid_type$layout()));
        c.add(size("union ibv_gid", ibv_gid.sizeof()));
        c.add(field("union ibv_gid", "raw", ibv_gid.raw$offset(), ibv_gid.raw$layout()));

        c.add(size("struct ibv_pd", ibv_pd.sizeof()));
        String mr = "struct ibv_mr";
        c.add(size(mr, ibv_mr.sizeof()));
        c.add(field(mr, "addr", ibv_mr.addr$offset(), ibv_mr.addr$layout()));
        c.add(field(mr, "length", ibv_mr.length$offset(), ibv_mr.length$layout()));
        c.add(field(mr, "lkey", ibv_mr.lkey$offset(), ibv_mr.lkey$layout()));
        c.add(field(mr, "rkey", ibv_mr.rkey$offset(), ibv_mr.rkey$layout()));
        c.add(size("struct ibv_comp_channel", ibv_comp_channel.sizeof()));
        c.add(field("struct ibv_comp_channel", "fd", ibv_comp_channel.fd$offset(), ibv_comp_channel.fd$layout()));
        c.add(size("struct ibv_cq", ibv_cq.sizeof()));
        c.add(field("struct ibv_cq", "cqe", ibv_cq.cqe$offset(), ibv_cq.cqe$layout()));
        c.add(size("struct ibv_ah", ibv_ah.sizeof()));

        c.add(size("struct ibv_qp", ibv_qp.sizeof()));
        c.add(field("struct ibv_qp", "qp_num", ibv_qp.qp_num$offset(), ibv_qp.qp_num$layout()));
        String qia = "struct ibv_qp_init_attr";
        c.add(size(qia, ibv_qp_init_attr.sizeof()));
        c.add(field(qia, "send_cq", ibv_qp_init_attr.send_cq$offset(), ibv_qp_init_attr.send_cq$layout()));
        c.add(field(qia, "recv_cq", ibv_qp_init_attr.recv_cq$offset(), ibv_qp_init_attr.recv_cq$layout()));
        c.add(field(qia, "cap", ibv_qp_init_attr.cap$offset(), ibv_qp_init_attr.cap$layout()));
        c.add(field(qia, "qp_type", ibv_qp_init_attr.qp_type$offset(), ibv_qp_init_attr.qp_type$layout()));
        c.add(field(qia, "sq_sig_all", ibv_qp_init_attr.sq_sig_all$offset(), ibv_qp_init_attr.sq_sig_all$layout()));
        String cap = "struct ibv_qp_cap";
        c.add(size(cap, ibv_qp_cap.sizeof()));
        c.add(field(cap, "max_send_wr", ibv_qp_cap.max_send_wr$offset(), ibv_qp_cap.max_send_wr$layout()));
        c.add(field(cap, "max_recv_wr", ibv_qp_cap.max_recv_wr$offset(), ibv_qp_cap.max_recv_wr$layout()));
        c.add(field(cap, "max_send_sge", ibv_qp_cap.max_send_sge$offset(), ibv_qp_cap.max_send_sge$layout()));
        c.add(field(cap, "max_recv_sge", ibv_qp_cap.max_recv_sge$offset(), ibv_qp_cap.max_recv_sge$layout()));
        c.add(field(cap, "max_inline_data", ibv_qp_cap.max_inline_data$offset(), ibv_qp_cap.max_inline_data$layout()));
        String qa = "struct ibv_qp_attr";
        c.add(size(qa, ibv_qp_attr.sizeof()));
        c.add(field(qa, "qp_state", ibv_qp_attr.qp_state$offset(), ibv_qp_attr.qp_state$layout()));
        c.add(field(qa, "path_mtu", ibv_qp_attr.path_mtu$offset(), ibv_qp_attr.path_mtu$layout()));
        c.add(field(qa, "qkey", ibv_qp_attr.qkey$offset(), ibv_qp_attr.qkey$layout()));
        c.add(field(qa, "rq_psn", ibv_qp_attr.rq_psn$offset(), ibv_qp_attr.rq_psn$layout()));
        c.add(field(qa, "sq_psn", ibv_qp_attr.sq_psn$offset(), ibv_qp_attr.sq_psn$layout()));
        c.add(field(qa, "dest_qp_num", ibv_qp_attr.dest_qp_num$offset(), ibv_qp_attr.dest_qp_num$layout()));
        c.add(field(qa, "qp_access_flags", ibv_qp_attr.qp_access_flags$offset(), ibv_qp_attr.qp_access_flags$layout()));
        c.add(field(qa, "ah_attr", ibv_qp_attr.ah_attr$offset(), ibv_qp_attr.ah_attr$layout()));
        c.add(field(qa, "pkey_index", ibv_qp_attr.pkey_index$offset(), ibv_qp_attr.pkey_index$layout()));
        c.add(field(qa, "max_rd_atomic", ibv_qp_attr.max_rd_atomic$offset(), ibv_qp_attr.max_rd_atomic$layout()));
        c.add(field(qa, "max_dest_rd_atomic", ibv_qp_attr.max_dest_rd_atomic$offset(), ibv_qp_attr.max_dest_rd_atomic$layout()));
        c.add(field(qa, "min_rnr_timer", ibv_qp_attr.min_rnr_timer$offset(), ibv_qp_attr.min_rnr_timer$layout()));
        c.add(field(qa, "port_num", ibv_qp_attr.port_num$offset(), ibv_qp_attr.port_num$layout()));
        c.add(field(qa, "timeout", ibv_qp_attr.timeout$offset(), ibv_qp_attr.timeout$layout()));
        c.add(field(qa, "retry_cnt", ibv_qp_attr.retry_cnt$offset(), ibv_qp_attr.retry_cnt$layout()));
        c.add(field(qa, "rnr_retry", ibv_qp_attr.rnr_retry$offset(), ibv_qp_attr.rnr_retry$layout()));
        String ah = "struct ibv_ah_attr";
        c.add(size(ah, ibv_ah_attr.sizeof()));
        c.add(field(ah, "grh", ibv_ah_attr.grh$offset(), ibv_ah_attr.grh$layout()));
        c.add(field(ah, "dlid", ibv_ah_attr.dlid$offset(), ibv_ah_attr.dlid$layout()));
        c.add(field(ah, "sl", ibv_ah_attr.sl$offset(), ibv_ah_attr.sl$layout()));
        c.add(field(ah, "is_global", ibv_ah_attr.is_global$offset(), ibv_ah_attr.is_global$layout()));
        c.add(field(ah, "port_num", ibv_ah_attr.port_num$offset(), ibv_ah_attr.port_num$layout()));
        String gr = "struct ibv_global_route";
        c.add(size(gr, ibv_global_route.sizeof()));
        c.add(field(gr, "dgid", ibv_global_route.dgid$offset(), ibv_global_route.dgid$layout()));
        c.add(field(gr, "sgid_index", ibv_global_route.sgid_index$offset(), ibv_global_route.sgid_index$layout()));
        c.add(field(gr, "hop_limit", ibv_global_route.hop_limit$offset(), ibv_global_route.hop_limit$layout()));
        c.add(field(gr, "traffic_class", ibv_global_route.traffic_class$offset(), ibv_global_route.traffic_class$layout()));

        String sge = "struct ibv_sge";
        c.add(size(sge, ibv_sge.sizeof()));
        c.add(field(sge, "addr", ibv_sge.addr$offset(), ibv_sge.addr$layout()));
        c.add(field(sge, "length", ibv_sge.length$offset(), ibv_sge.length$layout()));
        c.add(field(sge, "lkey", ibv_sge.lkey$offset(), ibv_sge.lkey$layout()));
        // the send WR offsets SendWorkRequests computes through the nested unions
        String sw = "struct ibv_send_wr";
        c.add(size(sw, ibv_send_wr.sizeof()));
        c.add(field(sw, "wr_id", ibv_send_wr.wr_id$offset(), ibv_send_wr.wr_id$layout()));
        c.add(field(sw, "next", ibv_send_wr.next$offset(), ibv_send_wr.next$layout()));
        c.add(field(sw, "sg_list", ibv_send_wr.sg_list$offset(), ibv_send_wr.sg_list$layout()));
        c.add(field(sw, "num_sge", ibv_send_wr.num_sge$offset(), ibv_send_wr.num_sge$layout()));
        c.add(field(sw, "opcode", SendWorkRequests.OPCODE, ibv_send_wr.opcode$layout()));
        c.add(field(sw, "send_flags", SendWorkRequests.FLAGS, ibv_send_wr.send_flags$layout()));
        c.add(field(sw, "imm_data", SendWorkRequests.IMM, ibv_send_wr.imm_data$layout()));
        c.add(field(sw, "wr.rdma.remote_addr", SendWorkRequests.RDMA_ADDR, ibv_send_wr.wr.rdma.remote_addr$layout()));
        c.add(field(sw, "wr.rdma.rkey", SendWorkRequests.RDMA_RKEY, ibv_send_wr.wr.rdma.rkey$layout()));
        c.add(field(sw, "wr.atomic.remote_addr", SendWorkRequests.ATOMIC_ADDR, ibv_send_wr.wr.atomic.remote_addr$layout()));
        c.add(field(sw, "wr.atomic.compare_add", SendWorkRequests.ATOMIC_COMPARE_ADD, ibv_send_wr.wr.atomic.compare_add$layout()));
        c.add(field(sw, "wr.atomic.swap", SendWorkRequests.ATOMIC_SWAP, ibv_send_wr.wr.atomic.swap$layout()));
        c.add(field(sw, "wr.atomic.rkey", SendWorkRequests.ATOMIC_RKEY, ibv_send_wr.wr.atomic.rkey$layout()));
        c.add(field(sw, "wr.ud.ah", SendWorkRequests.UD_AH, ibv_send_wr.wr.ud.ah$layout()));
        c.add(field(sw, "wr.ud.remote_qpn", SendWorkRequests.UD_QPN, ibv_send_wr.wr.ud.remote_qpn$layout()));
        c.add(field(sw, "wr.ud.remote_qkey", SendWorkRequests.UD_QKEY, ibv_send_wr.wr.ud.remote_qkey$layout()));
        String rw = "struct ibv_recv_wr";
        c.add(size(rw, ibv_recv_wr.sizeof()));
        c.add(field(rw, "wr_id", ibv_recv_wr.wr_id$offset(), ibv_recv_wr.wr_id$layout()));
        c.add(field(rw, "next", ibv_recv_wr.next$offset(), ibv_recv_wr.next$layout()));
        c.add(field(rw, "sg_list", ibv_recv_wr.sg_list$offset(), ibv_recv_wr.sg_list$layout()));
        c.add(field(rw, "num_sge", ibv_recv_wr.num_sge$offset(), ibv_recv_wr.num_sge$layout()));
        String wc = "struct ibv_wc";
        c.add(size(wc, WorkCompletions.STRIDE));
        c.add(field(wc, "wr_id", WorkCompletions.WR_ID, ibv_wc.wr_id$layout()));
        c.add(field(wc, "status", WorkCompletions.STATUS, ibv_wc.status$layout()));
        c.add(field(wc, "opcode", WorkCompletions.OPCODE, ibv_wc.opcode$layout()));
        c.add(field(wc, "vendor_err", WorkCompletions.VENDOR_ERR, ibv_wc.vendor_err$layout()));
        c.add(field(wc, "byte_len", WorkCompletions.BYTE_LEN, ibv_wc.byte_len$layout()));
        c.add(field(wc, "imm_data", WorkCompletions.IMM_DATA, ibv_wc.imm_data$layout()));
        c.add(field(wc, "qp_num", WorkCompletions.QP_NUM, ibv_wc.qp_num$layout()));
        c.add(field(wc, "src_qp", WorkCompletions.SRC_QP, ibv_wc.src_qp$layout()));
        c.add(field(wc, "wc_flags", WorkCompletions.WC_FLAGS, ibv_wc.wc_flags$layout()));

        String pf = "struct pollfd";
        c.add(size(pf, pollfd.sizeof()));
        c.add(field(pf, "fd", pollfd.fd$offset(), pollfd.fd$layout()));
        c.add(field(pf, "events", pollfd.events$offset(), pollfd.events$layout()));
        c.add(field(pf, "revents", pollfd.revents$offset(), pollfd.revents$layout()));
        c.addAll(CmLayoutChecks.checks());
        return c;
    }

    @Test
    void javaLayoutsMatchTheSystemHeadersAsGccSeesThem(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/infiniband/verbs.h"))
                && Files.exists(Path.of("/usr/include/rdma/rdma_cma.h")),
                "rdma-core headers missing: install libibverbs-dev librdmacm-dev");
        List<Check> checks = checks();
        StringBuilder src = new StringBuilder("""
                #include <stddef.h>
                #include <stdio.h>
                #include <poll.h>
                #include <infiniband/verbs.h>
                #include <rdma/rdma_cma.h>
                int main(void) {
                """);
        for (Check k : checks) {
            src.append("    ").append(k.cExpression()).append('\n');
        }
        src.append("    return 0;\n}\n");
        Path c = dir.resolve("layout.c");
        Files.writeString(c, src);
        Path exe = dir.resolve("layout");
        run(dir, "gcc", "-std=gnu11", "-Wall", "-Werror", "-o", exe.toString(), c.toString());
        List<String> lines = run(dir, exe.toString()).lines().toList();
        assertEquals(checks.size(), lines.size(), "one output line per check");

        List<String> mismatches = new ArrayList<>();
        for (int i = 0; i < checks.size(); i++) {
            Check k = checks.get(i);
            String[] cv = lines.get(i).split(" ");
            long cOffset = Long.parseLong(cv[0]);
            long cSize = Long.parseLong(cv[1]);
            if (cOffset != k.javaOffset() || cSize != k.javaSize()) {
                mismatches.add(k.label() + ": C offset " + cOffset + " size " + cSize + ", Java offset " + k.javaOffset()
                        + " size " + k.javaSize());
            }
        }
        if (!mismatches.isEmpty()) {
            fail(mismatches.size() + " of " + checks.size() + " layout checks differ:\n" + String.join("\n", mismatches));
        }
    }

    private static String run(Path dir, String... command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            if (command[0].equals("gcc")) {
                Assumptions.abort("gcc not found (install gcc to run the native layout check): " + e.getMessage());
            }
            throw e;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not finish within 60 s");
        }
        assertEquals(0, p.exitValue(), () -> String.join(" ", command) + " failed:\n" + out);
        return out;
    }
}

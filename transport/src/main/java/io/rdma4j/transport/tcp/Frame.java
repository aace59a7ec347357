package io.rdma4j.transport.tcp;

/**
 * The TCP provider's wire format. Every frame starts with a fixed 40-byte little-endian header
 * {@code [int type][int tag][long a][long b][long c][long d]}; frames of type DATA, WRITE and
 * READ_RESP are followed by {@code length} payload bytes. A connection starts with one HELLO
 * frame from the connecting (lower) rank.
 *
 * <pre>
 * HELLO     tag=version a=MAGIC b=fromRank c,d=listener secret of the accepting rank
 * CTS       tag          a=receive request id  b=capacity             (receiver -> sender)
 * DATA                   a=receive request id  b=length  + payload    (sender -> receiver)
 * EAGER     tag          b=length  + payload  (a small send before its CTS: for the oldest receive
 *                        of the tag that no message claimed yet, kept until one is posted)
 * SEND_ERR               a=receive request id  b=length the send had  (too large: both fail)
 * WRITE                  a=region key  b=offset  c=length  d=immediate or -1  + payload
 * READ_REQ               a=region key  b=offset  c=length  d=read request id
 * READ_RESP              a=read request id  b=length  + payload
 * READ_ERR               a=read request id (the region was deregistered meanwhile)
 * FAULT                  a=the rank whose loss ended the sender's transport (its last frame)
 * </pre>
 */
final class Frame {
    static final int HEADER = 40;
    static final long MAGIC = 0x52444D41344A5443L; // "RDMA4JTC"
    static final int VERSION = 1;

    static final int HELLO = 1;
    static final int CTS = 2;
    static final int DATA = 3;
    static final int SEND_ERR = 4;
    static final int WRITE = 5;
    static final int READ_REQ = 6;
    static final int READ_RESP = 7;
    static final int READ_ERR = 8;
    static final int FAULT = 9;
    static final int EAGER = 10;

    static final int OFF_TYPE = 0;
    static final int OFF_TAG = 4;
    static final int OFF_A = 8;
    static final int OFF_B = 16;
    static final int OFF_C = 24;
    static final int OFF_D = 32;

    private Frame() {
    }
}

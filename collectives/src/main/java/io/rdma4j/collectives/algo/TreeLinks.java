package io.rdma4j.collectives.algo;

/**
 * One rank's neighbours in the tree of a rooted collective (broadcast, reduce): the binomial tree
 * for small messages (log2 n hops) or the chain root, root+1, ... for large ones (every rank
 * forwards the data once, so a full pipeline runs at link bandwidth). Reused across calls.
 */
final class TreeLinks {
    /** The parent rank, or -1 at the root. */
    int parent;
    int[] kids = new int[8];
    int nKids;
    /** The parent (if any) followed by the kids: everyone this rank exchanges data with. */
    int[] peers = new int[9];
    int peerCount;

    void select(int rank, int root, int n, boolean small) {
        if (kids.length < Trees.maxChildren(n)) {
            kids = new int[Trees.maxChildren(n)];
            peers = new int[kids.length + 1];
        }
        parent = small ? Trees.binomialParent(rank, root, n) : Trees.chainParent(rank, root, n);
        nKids = small ? Trees.binomialChildren(rank, root, n, kids) : Trees.chainChildren(rank, root, n, kids);
        peerCount = 0;
        if (parent >= 0) {
            peers[peerCount++] = parent;
        }
        for (int i = 0; i < nKids; i++) {
            peers[peerCount++] = kids[i];
        }
    }
}

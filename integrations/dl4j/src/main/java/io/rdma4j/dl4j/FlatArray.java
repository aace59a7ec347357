package io.rdma4j.dl4j;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One of a network's flat arrays (parameters, gradients, updater state) as memory the
 * communicator can reduce and broadcast in place.
 *
 * <p>The segment is a view of the array's own native buffer when the array is contiguous and the
 * view provably aliases it (a value written through the segment reads back through ND4J);
 * otherwise the array is staged through a contiguous copy on each call. The view belongs to the
 * caller's arena: when that arena closes, the verbs provider sees the memory as freed and releases
 * its registration, so nothing stays pinned after the network is detached.
 */
final class FlatArray {
    private final String name;
    private final INDArray array;
    private final INDArray staging;
    private final MemorySegment segment;
    private final DataType type;
    private final long count;
    private final long baseAddress;

    private FlatArray(String name, INDArray array, INDArray staging, MemorySegment segment, DataType type) {
        this.name = name;
        this.array = array;
        this.staging = staging;
        this.segment = segment;
        this.type = type;
        this.count = array.length();
        this.baseAddress = array.data().address();
    }

    /** Binds {@code array}; {@code allowZeroCopy = false} always stages (how the staged path is tested). */
    static FlatArray of(String name, INDArray array, Arena arena, boolean allowZeroCopy) {
        DataType type = typeOf(name, array);
        if (allowZeroCopy) {
            MemorySegment view = viewOf(array, type, arena);
            if (view != null) {
                return new FlatArray(name, array, null, view, type);
            }
        }
        INDArray staging = Nd4j.create(array.dataType(), array.shape(), 'c');
        MemorySegment view = viewOf(staging, type, arena);
        if (view == null) {
            throw new IllegalStateException("ND4J's fresh " + array.dataType() + " array is not addressable as native memory; "
                    + "rdma4j needs ND4J's CPU backend (nd4j-native)");
        }
        return new FlatArray(name, array, staging, view, type);
    }

    static DataType typeOf(String name, INDArray array) {
        return switch (array.dataType()) {
            case FLOAT -> DataType.F32;
            case DOUBLE -> DataType.F64;
            default -> throw new IllegalArgumentException("the network's " + name + " are " + array.dataType()
                    + "; data-parallel training supports FLOAT and DOUBLE networks");
        };
    }

    /** A view of the array's memory, or null where the array is not one contiguous native run that the view aliases. */
    private static MemorySegment viewOf(INDArray array, DataType type, Arena arena) {
        long length = array.length();
        if (length == 0 || (length > 1 && array.elementWiseStride() != 1) || array.data().address() == 0) {
            return null;
        }
        long address = array.data().address() + array.offset() * type.byteSize();
        MemorySegment view = MemorySegment.ofAddress(address).reinterpret(length * type.byteSize(), arena, null);
        return aliases(array, view, type) ? view : null;
    }

    /** Writes a marker through the view at the first and last element and reads it back through ND4J, then restores both. */
    private static boolean aliases(INDArray array, MemorySegment view, DataType type) {
        long last = array.length() - 1;
        for (long i : new long[] {0, last}) {
            long offset = i * type.byteSize();
            double saved = array.getDouble(i);
            double marker = saved == 1234.5 ? -1234.5 : 1234.5;
            if (type == DataType.F32) {
                float old = view.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset);
                view.set(ValueLayout.JAVA_FLOAT_UNALIGNED, offset, (float) marker);
                boolean same = array.getDouble(i) == marker;
                view.set(ValueLayout.JAVA_FLOAT_UNALIGNED, offset, old);
                if (!same) {
                    return false;
                }
            } else {
                double old = view.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, offset);
                view.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, offset, marker);
                boolean same = array.getDouble(i) == marker;
                view.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, offset, old);
                if (!same) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * Every rank's array becomes the element-wise mean of all ranks' arrays; {@code current} is
     * what the network holds now, which must still be this array (a network that replaced it,
     * e.g. by initGradientsView() again, would otherwise train on gradients nobody averaged).
     */
    void averageAcross(Communicator comm, INDArray current) {
        if (current != array) {
            throw new IllegalStateException("the network's " + name + " array was replaced after data-parallel "
                    + "training attached; re-attach after replacing the network's arrays");
        }
        checkNotMoved();
        stageIn();
        comm.allReduce(segment, type, ReduceOp.AVG);
        stageOut();
    }

    /** Every rank's array becomes {@code root}'s. */
    void broadcastFrom(Communicator comm, int root) {
        checkNotMoved();
        stageIn();
        comm.broadcast(segment, count, type, root);
        stageOut();
    }

    boolean zeroCopy() {
        return staging == null;
    }

    DataType type() {
        return type;
    }

    long count() {
        return count;
    }

    private void stageIn() {
        if (staging != null) {
            staging.assign(array);
        }
    }

    private void stageOut() {
        if (staging != null) {
            array.assign(staging);
        }
    }

    private void checkNotMoved() {
        if (array.data().address() != baseAddress) {
            throw new IllegalStateException("the network's " + name + " array moved (ND4J reallocated it); "
                    + "re-attach data-parallel training after replacing the network's arrays");
        }
    }
}

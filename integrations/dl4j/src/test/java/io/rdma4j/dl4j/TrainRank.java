package io.rdma4j.dl4j;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.UnevenDataException;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.buffer.DataType;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank of the DL4J tests: {@code KIND TYPE UPDATER STEPS ROWS OUT_DIR ZERO_COPY [SHORT_RANK [RESUMED_AT]]}.
 * Builds the network with a seed of its own (so only the broadcast makes the ranks agree), trains
 * STEPS global batches of ROWS examples per rank through {@link DataParallel}, and writes its
 * parameters' bits to OUT_DIR/rankR.bin. SHORT_RANK, when given and not -1, gets one batch less.
 * RESUMED_AT, when given, is rank 0's iteration count before it attaches (and a tenth of it its
 * epoch count), as if it resumed from a checkpoint while the others start fresh. Exits 3 with the
 * message on stdout when the data is uneven.
 */
public final class TrainRank {
    public static void main(String[] args) throws Exception {
        String kind = args[0];
        DataType type = DataType.valueOf(args[1].toUpperCase());
        String updater = args[2];
        int steps = Integer.parseInt(args[3]);
        int rows = Integer.parseInt(args[4]);
        Path out = Path.of(args[5]);
        boolean zeroCopy = Boolean.parseBoolean(args[6]);
        int shortRank = args.length > 7 ? Integer.parseInt(args[7]) : -1;
        int resumedAt = args.length > 8 ? Integer.parseInt(args[8]) : 0;
        try (Communicator comm = Communicator.fromEnvironment()) {
            Model model = TinyNetworks.build(kind, type, updater, 1000 + comm.rank());
            int mySteps = comm.rank() == shortRank ? steps - 1 : steps;
            if (comm.rank() == 0 && resumedAt > 0) {
                TinyNetworks.setCounts(model, resumedAt, resumedAt / 10);
            }
            try (DataParallel dp = new DataParallel(comm, model, zeroCopy)) {
                dp.fit(TinyNetworks.shards(mySteps, comm.size(), comm.rank(), rows, type));
                System.out.println("steps " + dp.steps() + " zeroCopy " + dp.zeroCopy() + " provider " + comm.provider()
                        + " iterations " + TinyNetworks.iterations(model) + " epochs " + TinyNetworks.epochs(model));
            } catch (UnevenDataException e) {
                System.out.println("UNEVEN: " + e.getMessage());
                System.out.flush();
                Runtime.getRuntime().halt(3);
            }
            Files.write(out.resolve("rank" + comm.rank() + ".bin"), TinyNetworks.parameterBits(model));
        }
    }
}

package io.rdma4j.djl;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.translate.TranslateException;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.UnevenDataException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank of the DJL tests: {@code OPTIMIZER STEPS ROWS OUT_DIR [SHORT_RANK [batchnorm]]}. Trains
 * (see {@link #train}) and writes its parameters' bits to OUT_DIR/rankR.bin. SHORT_RANK, when given
 * and not -1, gets one batch less; {@code batchnorm} trains the model with a BatchNorm layer. Exits 3
 * with the message on stdout when the data is uneven.
 */
public final class TrainDjlRank {
    private TrainDjlRank() {
    }

    public static void main(String[] args) throws Exception {
        String optimizer = args[0];
        int steps = Integer.parseInt(args[1]);
        int rows = Integer.parseInt(args[2]);
        Path out = Path.of(args[3]);
        int shortRank = args.length > 4 ? Integer.parseInt(args[4]) : -1;
        boolean batchNorm = args.length > 5 && args[5].equals("batchnorm");
        try (Communicator comm = Communicator.fromEnvironment()) {
            byte[] bits;
            try {
                bits = train(comm, optimizer, comm.rank() == shortRank ? steps - 1 : steps, rows, batchNorm);
            } catch (UnevenDataException e) {
                System.out.println("UNEVEN: " + e.getMessage());
                System.out.flush();
                Runtime.getRuntime().halt(3);
                return;
            }
            System.out.println("provider " + comm.provider());
            Files.write(out.resolve("rank" + comm.rank() + ".bin"), bits);
        }
    }

    /**
     * Seeds the model with a seed of this rank's own (so only the broadcast makes the ranks
     * agree), trains one epoch of {@code steps} batches of {@code rows} examples (this rank's
     * shards of the global batches) with EasyTrain.fit and returns the parameters' bits. Prints
     * "steps N" (the steps DataParallel averaged).
     */
    public static byte[] train(Communicator comm, String optimizer, int steps, int rows, boolean batchNorm)
            throws IOException, TranslateException {
        try (DataParallel dp = new DataParallel(comm);
             Model model = TinyModels.model(batchNorm);
             Trainer trainer = TinyModels.trainer(model, optimizer, dp);
             NDManager data = NDManager.newBaseManager()) {
            TinyModels.seed(1000 + comm.rank());
            dp.initialize(trainer, TinyModels.inputShape(rows));
            EasyTrain.fit(trainer, 1, TinyModels.shards(data, steps, comm.size(), comm.rank(), rows), null);
            System.out.println("steps " + dp.steps());
            return TinyModels.parameterBits(model);
        }
    }
}

package io.rdma4j.examples;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a training run ends with: every layer's parameters (backward order) and the global mean
 * loss of each step. Written to a file by each rank so that a test can compare them bit for bit.
 */
public record TrainingResult(float[][] parameters, float[] losses) {

    public void write(Path file) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file)))) {
            out.writeInt(parameters.length);
            for (float[] p : parameters) {
                writeFloats(out, p);
            }
            writeFloats(out, losses);
        }
    }

    public static TrainingResult read(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
            float[][] params = new float[in.readInt()][];
            for (int i = 0; i < params.length; i++) {
                params[i] = readFloats(in);
            }
            return new TrainingResult(params, readFloats(in));
        }
    }

    private static void writeFloats(DataOutputStream out, float[] v) throws IOException {
        out.writeInt(v.length);
        for (float f : v) {
            // raw bits: the comparison is of exact values, NaN payloads included
            out.writeInt(Float.floatToRawIntBits(f));
        }
    }

    private static float[] readFloats(DataInputStream in) throws IOException {
        float[] v = new float[in.readInt()];
        for (int i = 0; i < v.length; i++) {
            v[i] = Float.intBitsToFloat(in.readInt());
        }
        return v;
    }
}

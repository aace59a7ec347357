package io.rdma4j.bench.plot;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.List;

/**
 * Draws stacked panels that share a log2 "message size" axis (bandwidth above, latency below)
 * into a PNG, headless. One colour per configuration (e.g. rank count), solid for rdma4j and
 * dashed for the peer, so a reader compares pairs at a glance.
 */
public final class ComparisonPlot {
    private static final Color[] COLOURS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
            new Color(0x9467bd), new Color(0xff7f0e), new Color(0x7f7f7f), new Color(0x8c564b)};

    /** A panel: its y label, whether its y axis is logarithmic, and its lines. */
    public record Panel(String yLabel, boolean logY, List<Series> series) {
    }

    private ComparisonPlot() {
    }

    public static void write(Path png, String title, String subtitle, List<Panel> panels, int width, int height) {
        System.setProperty("java.awt.headless", "true");
        LogAxis x = new LogAxis("message size (bytes)");
        x.setBase(2);
        x.setTickUnit(new NumberTickUnit(2)); // a tick every 4x in size (powers of 2, every other)
        x.setNumberFormatOverride(new SizeFormat());
        x.setTickLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        x.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
        CombinedDomainXYPlot combined = new CombinedDomainXYPlot(x);
        combined.setGap(12);
        boolean first = true;
        for (Panel p : panels) {
            combined.add(plot(p, first), p.logY() ? 2 : 3); // the panels share the lines: one legend
            first = false;
        }
        JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 18), combined, true);
        if (subtitle != null) {
            chart.addSubtitle(new TextTitle(subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        }
        chart.setBackgroundPaint(Color.WHITE);
        chart.getLegend().setItemFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        try {
            Path parent = png.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            ChartUtils.saveChartAsPNG(png.toFile(), chart, width, height);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + png + ": " + e.getMessage(), e);
        }
    }

    private static XYPlot plot(Panel p, boolean inLegend) {
        XYSeriesCollection data = new XYSeriesCollection();
        XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, true);
        int i = 0;
        for (Series s : p.series()) {
            XYSeries xy = new XYSeries(s.name(), false, true);
            for (double[] pt : s.points()) {
                if (pt[0] > 0 && (!p.logY() || pt[1] > 0)) {
                    xy.add(pt[0], pt[1]);
                }
            }
            data.addSeries(xy);
            r.setSeriesPaint(i, COLOURS[s.colour() % COLOURS.length]);
            r.setSeriesStroke(i, s.dashed()
                    ? new BasicStroke(2f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND, 1f, new float[] {6f, 4f}, 0f)
                    : new BasicStroke(2.2f));
            r.setSeriesVisibleInLegend(i, inLegend);
            i++;
        }
        ValueAxis y;
        if (p.logY()) {
            LogAxis ly = new LogAxis(p.yLabel());
            ly.setBase(10);
            ly.setSmallestValue(1e-3);
            ly.setTickUnit(new NumberTickUnit(1)); // a label per power of ten
            ly.setNumberFormatOverride(new DecimalFormat("0.###"));
            y = ly;
        } else {
            NumberAxis ny = new NumberAxis(p.yLabel());
            ny.setAutoRangeIncludesZero(true);
            y = ny;
        }
        y.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
        y.setTickLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        XYPlot plot = new XYPlot(data, null, y, r);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(new Color(0xdddddd));
        plot.setRangeGridlinePaint(new Color(0xdddddd));
        return plot;
    }

    /** Tick labels as 8, 512, 32K, 2M, 128M. */
    private static final class SizeFormat extends NumberFormat {
        @Override
        public StringBuffer format(double number, StringBuffer toAppendTo, FieldPosition pos) {
            return format(Math.round(number), toAppendTo, pos);
        }

        @Override
        public StringBuffer format(long n, StringBuffer toAppendTo, FieldPosition pos) {
            return toAppendTo.append(io.rdma4j.bench.ByteSizes.format(n));
        }

        @Override
        public Number parse(String source, ParsePosition parsePosition) {
            throw new UnsupportedOperationException("labels only");
        }
    }
}

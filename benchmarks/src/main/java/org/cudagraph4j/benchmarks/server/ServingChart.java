package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.geom.Ellipse2D;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.benchmarks.ChartSheet;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.XYStyler;
import org.knowm.xchart.style.markers.Circle;
import org.knowm.xchart.style.markers.Marker;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * {@link ServingReport}'s {@code chart.svg}: p50 (solid) and p99 (dashed) latency against offered
 * load, both servers, log-log, one panel per mix, two side by side. Needs {@code java.desktop}.
 */
final class ServingChart {
    static final int WIDTH = 960;
    static final int PANEL_HEIGHT = 420;
    private static final Map<String, Color> COLORS = Map.of("java", new Color(0xd62728), "torch", new Color(0x555555));
    private static final Color LIMIT_COLOR = new Color(0x2ca02c);
    private static final BasicStroke SOLID = new BasicStroke(1.5f);
    private static final BasicStroke DASHED = new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10,
            new float[] {5, 3}, 0);
    private static final double LIMIT_MILLIS = ServingReport.P99_LIMIT_MICROS / 1e3;

    private ServingChart() {}

    /**
     * @param runName the run, for the heading
     * @param loads by mix, each server's points
     * @return the SVG document
     */
    static String svg(String runName, Collection<Map<String, ServingReport.Series>> loads) {
        String heading = "Latency against offered load, " + runName
                + " (open loop, from intended arrival; hollow: not sustained)";
        if (loads.isEmpty()) {
            return ChartSheet.svg(WIDTH, List.of(new ChartSheet.Row(heading, 1, 80,
                    List.of(ChartSheet.Panel.message("", "no load results in this folder")))));
        }
        int columns = Math.min(2, loads.size());
        List<ChartSheet.Panel> panels = loads.stream().map(byServer -> ChartSheet.Panel.of(chart(byServer,
                WIDTH / columns))).toList();
        List<ChartSheet.Row> rows = new ArrayList<>();
        for (int first = 0; first < panels.size(); first += columns) {
            rows.add(new ChartSheet.Row(first == 0 ? heading : "", columns, PANEL_HEIGHT,
                    panels.subList(first, Math.min(first + columns, panels.size()))));
        }
        return ChartSheet.svg(WIDTH, rows);
    }

    /** One mix: a line per server and percentile, rings over the points not sustained, and the 10 ms limit. */
    static XYChart chart(Map<String, ServingReport.Series> byServer, int width) {
        XYChart chart = new XYChartBuilder().width(width).height(PANEL_HEIGHT)
                .title(ServingReport.mixTitle(byServer.values().iterator().next().options()))
                .xAxisTitle("offered load, requests/s (log scale)").yAxisTitle("latency, ms (log scale)").build();
        List<Double> rates = new ArrayList<>();
        List<Double> latencies = new ArrayList<>(List.of(LIMIT_MILLIS));
        for (String server : ServingReport.SERVERS) {
            ServingReport.Series series = byServer.get(server);
            if (series == null) {
                continue;
            }
            List<JsonNode> points = series.points().stream().filter(p -> !p.path("recovery").asBoolean())
                    .sorted(Comparator.comparingInt(p -> p.path("offeredPerSecond").asInt())).toList();
            points.forEach(p -> rates.add(p.path("offeredPerSecond").asDouble()));
            for (String percentile : List.of("p50", "p99")) {
                String name = ServingReport.NAMES.get(server) + " " + percentile;
                List<JsonNode> drawn = points.stream().filter(p -> millis(p, percentile) > 0).toList();
                if (drawn.isEmpty()) {
                    continue;
                }
                drawn.forEach(p -> latencies.add(millis(p, percentile)));
                XYSeries line = add(chart, name, drawn, percentile);
                line.setLineStyle(percentile.equals("p50") ? SOLID : DASHED);
                line.setMarker(new Circle());
                paint(line, COLORS.get(server));
                List<JsonNode> notSustained = drawn.stream().filter(p -> !p.path("sustained").asBoolean()).toList();
                if (!notSustained.isEmpty()) {
                    XYSeries rings = add(chart, name + " not sustained", notSustained, percentile);
                    rings.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
                    rings.setMarker(new Ring());
                    rings.setShowInLegend(false);
                    paint(rings, COLORS.get(server));
                }
            }
        }
        if (rates.isEmpty()) {
            rates.add(1.0);
        }
        // Whole decades on both axes, as wide as the points and the limit, so that one point is a range too.
        double rateLow = decadeBelow(Collections.min(rates));
        double rateHigh = decadeAbove(Collections.max(rates));
        XYSeries limit = chart.addSeries("p99 limit, " + (int) LIMIT_MILLIS + " ms", new double[] {rateLow, rateHigh},
                new double[] {LIMIT_MILLIS, LIMIT_MILLIS});
        limit.setLineStyle(DASHED);
        limit.setMarker(SeriesMarkers.NONE);
        paint(limit, LIMIT_COLOR);
        ChartSheet.style(chart);
        XYStyler styler = chart.getStyler();
        styler.setXAxisLogarithmic(true);
        styler.setYAxisLogarithmic(true);
        styler.setXAxisMin(rateLow);
        styler.setXAxisMax(rateHigh);
        styler.setYAxisMin(decadeBelow(Collections.min(latencies)));
        styler.setYAxisMax(decadeAbove(Collections.max(latencies)));
        styler.setMarkerSize(6);
        return chart;
    }

    private static XYSeries add(XYChart chart, String name, List<JsonNode> points, String percentile) {
        return chart.addSeries(name, points.stream().mapToDouble(p -> p.path("offeredPerSecond").asDouble()).toArray(),
                points.stream().mapToDouble(p -> millis(p, percentile)).toArray());
    }

    private static void paint(XYSeries series, Color color) {
        series.setLineColor(color);
        series.setMarkerColor(color);
    }

    private static double millis(JsonNode point, String percentile) {
        return point.path(percentile + "Micros").asDouble() / 1e3;
    }

    private static double decadeBelow(double v) {
        return Math.pow(10, Math.floor(Math.log10(v)));
    }

    /** Strictly above, so that the highest point, or the limit, is never on the plot's edge. */
    private static double decadeAbove(double v) {
        return Math.pow(10, Math.floor(Math.log10(v)) + 1);
    }

    /** A hollow circle, drawn over a point's filled one: the server did not sustain that load. */
    private static final class Ring extends Marker {
        @Override
        public void paint(Graphics2D g, double x, double y, int size) {
            Ellipse2D circle = new Ellipse2D.Double(x - size / 2.0, y - size / 2.0, size, size);
            Color color = g.getColor();
            g.setColor(Color.WHITE);
            g.fill(circle);
            g.setColor(color);
            g.setStroke(SOLID);
            g.draw(circle);
        }
    }
}

package org.cudagraph4j.benchmarks;

import java.awt.Color;
import java.util.Arrays;
import java.util.DoubleSummaryStatistics;
import java.util.List;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.CategoryStyler;

/** {@link Report}'s {@code chart.svg}: its rows of bar charts on log scales. Needs {@code java.desktop}. */
final class ResultsChart {
    static final int WIDTH = 960;
    static final int PANEL_HEIGHT = 400;
    /** The y axis, its title, its labels and the margins: a panel's width less this is the plot's. */
    private static final int AXIS_WIDTH = 70;
    /** The least room between two group labels, in pixels. */
    private static final int LABEL_GAP = 8;

    private ResultsChart() {}

    static String svg(List<Report.PanelRow> rows) {
        return ChartSheet.svg(WIDTH, rows.stream().map(row -> new ChartSheet.Row(row.heading(), row.columns(),
                PANEL_HEIGHT, row.panels().stream().map(bars -> panel(bars, WIDTH / row.columns())).toList()))
                .toList());
    }

    /** A bar chart of {@code bars}, or, without a value to draw, a panel that says it was not measured. */
    static ChartSheet.Panel panel(Report.BarPanel bars, int width) {
        if (!bars.measured()) {
            return ChartSheet.Panel.message(bars.title(), "not measured in this run");
        }
        CategoryChart chart = new CategoryChartBuilder().width(width).height(PANEL_HEIGHT).title(bars.title())
                .yAxisTitle(bars.axis()).build();
        for (int s = 0; s < bars.series().size(); s++) {
            int column = s;
            // A missing value is a gap, not a bar: XChart skips nulls.
            List<Double> values = bars.values().stream().map(group -> group[column])
                    .map(v -> v > 0 ? v : null).toList();
            chart.addSeries(bars.series().get(s), bars.groups(), values)
                    .setFillColor(Color.decode(bars.colors().get(s)));
        }
        ChartSheet.style(chart);
        CategoryStyler styler = chart.getStyler();
        styler.setYAxisLogarithmic(true);
        // A bar chart's axis starts at 0, which a log scale cannot show: from the decade below the
        // shortest bar (so that it is never of no height) to the decade at or above the tallest.
        DoubleSummaryStatistics range = bars.values().stream().flatMapToDouble(Arrays::stream).filter(v -> v > 0)
                .summaryStatistics();
        double low = Math.pow(10, Math.ceil(Math.log10(range.getMin())) - 1);
        double high = Math.max(low * 10, Math.pow(10, Math.ceil(Math.log10(range.getMax()))));
        styler.setYAxisMin(low);
        styler.setYAxisMax(high);
        // Labels wider than their group would run into each other: slanted, they pass.
        double groupWidth = (width - AXIS_WIDTH) * styler.getPlotContentSize() / bars.groups().size();
        if (!ChartSheet.labelsFit(bars.groups(), groupWidth - LABEL_GAP)) {
            styler.setXAxisLabelRotation(30);
        }
        return ChartSheet.Panel.of(chart);
    }
}

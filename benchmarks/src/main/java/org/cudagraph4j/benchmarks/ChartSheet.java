package org.cudagraph4j.benchmarks;

import de.erichseifert.vectorgraphics2d.VectorGraphics2D;
import de.erichseifert.vectorgraphics2d.svg.SVGProcessor;
import de.erichseifert.vectorgraphics2d.util.PageSize;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.font.FontRenderContext;
import java.awt.font.TextLayout;
import java.awt.geom.AffineTransform;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.internal.series.Series;
import org.knowm.xchart.style.AxesChartStyler;
import org.knowm.xchart.style.Styler;

/**
 * XChart panels laid out in rows on one SVG canvas, each row under a heading, in one look. XChart's
 * {@code VectorGraphicsEncoder} writes one chart per file; a report's chart is several side by side,
 * so they are painted onto one {@link VectorGraphics2D} and written by its {@link SVGProcessor}, as
 * that encoder does for one. Needs {@code java.desktop}: reached only through {@link Charts#write}.
 */
public final class ChartSheet {
    private static final Font HEADING_FONT = new Font(Font.SANS_SERIF, Font.BOLD, 14);
    private static final Font TITLE_FONT = new Font(Font.SANS_SERIF, Font.BOLD, 12);
    private static final Font AXIS_TITLE_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 11);
    private static final Font LABEL_FONT = new Font(Font.SANS_SERIF, Font.PLAIN, 10);
    private static final int HEADING_HEIGHT = 28;
    private static final FontRenderContext MEASURE = new FontRenderContext(null, true, true);
    /** Path data: VectorGraphics2D writes coordinates to 16 digits; tenths of a pixel halve the file, unseen. */
    private static final Pattern PATH_DATA = Pattern.compile(" d=\"([^\"]*)\"");
    private static final Pattern NUMBER = Pattern.compile("-?\\d+\\.\\d+(?:[eE][-+]?\\d+)?");

    private ChartSheet() {}

    /**
     * One panel: an XChart, or a title over a line that says why there is no chart.
     *
     * @param title the panel's title
     * @param chart the chart, or null
     * @param message what the panel says instead of a chart
     */
    public record Panel(String title, Chart<?, ?> chart, String message) {
        /** {@return a panel of {@code chart}, under its own title} */
        public static Panel of(Chart<?, ?> chart) {
            return new Panel(chart.getTitle(), chart, null);
        }

        /** {@return a panel that says {@code message} under {@code title} instead of drawing a chart} */
        public static Panel message(String title, String message) {
            return new Panel(title, null, message);
        }
    }

    /**
     * Panels side by side, each a {@code columns}-th of the sheet's width, under a heading.
     *
     * @param heading the row's heading; empty for none (a row continuing the one above)
     * @param columns how many panels the row has room for
     * @param height the panels' height, in pixels
     * @param panels at most {@code columns} panels, from the left
     */
    public record Row(String heading, int columns, int height, List<Panel> panels) {}

    /**
     * The look every panel shares: white, light grid lines, plain small labels and the legend
     * under the plot, its entries side by side where they fit the panel's width and one per line
     * where they do not.
     *
     * @param chart a chart whose series are all added
     */
    public static void style(Chart<? extends AxesChartStyler, ?> chart) {
        AxesChartStyler styler = chart.getStyler();
        styler.setChartBackgroundColor(Color.WHITE);
        styler.setPlotBackgroundColor(Color.WHITE);
        styler.setPlotBorderColor(Color.GRAY);
        styler.setPlotGridLinesColor(new Color(0xe5e5e5));
        styler.setPlotGridLinesStroke(new BasicStroke(1));
        styler.setAxisTickMarksColor(Color.GRAY);
        styler.setChartFontColor(Color.BLACK);
        styler.setChartTitleFont(TITLE_FONT);
        styler.setChartTitleBoxVisible(false);
        styler.setAxisTitleFont(AXIS_TITLE_FONT);
        styler.setAxisTickLabelsFont(LABEL_FONT);
        styler.setLegendFont(LABEL_FONT);
        // Plain numbers on log axes too (XChart writes 1E4 from 10,000 up), the same on every host.
        styler.setLocale(Locale.ROOT);
        styler.setYAxisDecimalPattern("#,##0.###");
        styler.setXAxisDecimalPattern("#,##0.###");
        styler.setLegendBorderColor(Color.WHITE);
        styler.setLegendPosition(Styler.LegendPosition.OutsideS);
        int legendWidth = 0;
        for (Series series : chart.getSeriesCollection()) {
            if (series.isShowInLegend()) {
                // The marker or line before each name, and the gaps around it.
                legendWidth += styler.getLegendSeriesLineLength() + 3 * styler.getLegendPadding()
                        + (int) Math.ceil(textWidth(series.getName(), LABEL_FONT));
            }
        }
        styler.setLegendLayout(legendWidth + 2 * styler.getLegendPadding() <= chart.getWidth()
                ? Styler.LegendLayout.Horizontal : Styler.LegendLayout.Vertical);
    }

    /** {@return whether each of {@code labels}, as a tick label, is at most {@code width} pixels wide} */
    public static boolean labelsFit(List<String> labels, double width) {
        return labels.stream().allMatch(label -> textWidth(label, LABEL_FONT) <= width);
    }

    private static double textWidth(String text, Font font) {
        return font.getStringBounds(text, MEASURE).getWidth();
    }

    /**
     * Draws {@code rows} one under the other on a white sheet {@code width} pixels wide. The SVG
     * carries the headings as its {@code <title>} and each panel's title and series (or message)
     * in its {@code <desc>}: XChart draws text as outlines, so this is the only text in it.
     *
     * @param width the sheet's width, in pixels
     * @param rows the rows, top to bottom
     * @return the SVG document
     */
    public static String svg(int width, List<Row> rows) {
        int height = rows.stream().mapToInt(row -> headingHeight(row) + row.height()).sum();
        VectorGraphics2D sheet = new VectorGraphics2D();
        sheet.setColor(Color.WHITE);
        sheet.fillRect(0, 0, width, height);
        int top = 0;
        for (Row row : rows) {
            if (!row.heading().isEmpty()) {
                sheet.setColor(Color.BLACK);
                drawCentered(sheet, row.heading(), HEADING_FONT, width / 2.0, top + 20);
            }
            top += headingHeight(row);
            int panelWidth = width / row.columns();
            for (int i = 0; i < row.panels().size(); i++) {
                Graphics2D g = (Graphics2D) sheet.create();
                g.translate(i * panelWidth, top);
                g.clipRect(0, 0, panelWidth, row.height());
                paint(g, row.panels().get(i), panelWidth, row.height());
                g.dispose();
            }
            top += row.height();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            new SVGProcessor().getDocument(sheet.getCommands(), new PageSize(0, 0, width, height)).writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return withText(roundPaths(out.toString(StandardCharsets.UTF_8)), rows);
    }

    private static int headingHeight(Row row) {
        return row.heading().isEmpty() ? 0 : HEADING_HEIGHT;
    }

    private static void paint(Graphics2D g, Panel panel, int width, int height) {
        if (panel.chart() != null) {
            panel.chart().paint(g, width, height);
            return;
        }
        g.setColor(Color.BLACK);
        if (!panel.title().isEmpty()) {
            drawCentered(g, panel.title(), TITLE_FONT, width / 2.0, 20);
        }
        drawCentered(g, panel.message(), AXIS_TITLE_FONT, width / 2.0, height / 2.0);
    }

    /** As an outline, as XChart draws its text: an SVG {@code <text>} would take the viewer's fonts. */
    private static void drawCentered(Graphics2D g, String text, Font font, double centre, double baseline) {
        TextLayout layout = new TextLayout(text, font, g.getFontRenderContext());
        g.fill(layout.getOutline(AffineTransform.getTranslateInstance(centre - layout.getAdvance() / 2, baseline)));
    }

    /** Every path's coordinates to a tenth of a pixel. */
    private static String roundPaths(String svg) {
        return PATH_DATA.matcher(svg).replaceAll(path -> " d=\"" + NUMBER.matcher(path.group(1))
                .replaceAll(number -> tenths(Double.parseDouble(number.group()))) + "\"");
    }

    private static String tenths(double value) {
        long rounded = Math.round(value * 10);
        return rounded % 10 == 0 ? Long.toString(rounded / 10) : String.format(Locale.ROOT, "%.1f", rounded / 10.0);
    }

    /** The headings as the SVG's title and the panels as its description, right after its opening tag. */
    private static String withText(String svg, List<Row> rows) {
        List<String> headings = new ArrayList<>();
        StringBuilder description = new StringBuilder();
        for (Row row : rows) {
            if (!row.heading().isEmpty()) {
                headings.add(row.heading());
            }
            for (Panel panel : row.panels()) {
                description.append('\n').append(panel.title().isEmpty() ? "" : panel.title() + ": ");
                description.append(panel.chart() == null ? panel.message() : String.join(", ",
                        panel.chart().getSeriesCollection().stream().filter(Series::isShowInLegend)
                                .map(Series::getName).toList()));
            }
        }
        int openingTagEnd = svg.indexOf('>', svg.indexOf("<svg")) + 1;
        return svg.substring(0, openingTagEnd) + "\n  <title>" + escape(String.join("; ", headings))
                + "</title>\n  <desc>" + escape(description.toString().strip()) + "</desc>" + svg.substring(openingTagEnd);
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}

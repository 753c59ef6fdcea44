package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.StringReader;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.xml.sax.InputSource;

/** A chart as the tests read it: its SVG parsed, and the text it carries (XChart draws its own as outlines). */
public record Svg(Document document) {
    /**
     * Parses {@code svg}, which must be an SVG document.
     *
     * @param svg the document
     * @return it, parsed
     * @throws Exception if it is not well-formed XML
     */
    public static Svg parse(String svg) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        // The document names its DTD by URL: a test must not fetch it.
        factory.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        Document document = factory.newDocumentBuilder().parse(new InputSource(new StringReader(svg)));
        assertEquals("svg", document.getDocumentElement().getNodeName());
        return new Svg(document);
    }

    /** {@return the root's attribute, e.g. its height} */
    public String attribute(String name) {
        return document.getDocumentElement().getAttribute(name);
    }

    /** {@return the headings} */
    public String title() {
        return document.getElementsByTagName("title").item(0).getTextContent();
    }

    /** {@return one line per panel: its title, then its series or why it has no chart} */
    public String description() {
        return document.getElementsByTagName("desc").item(0).getTextContent();
    }
}

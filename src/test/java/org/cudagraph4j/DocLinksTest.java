package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every relative link and image of the README, the guides under {@code src/site/markdown/},
 * {@code benchmarks/README.md} and {@code kernels/PERFORMANCE.md} points at a file or folder of the
 * checkout, and every {@code path#anchor} into a Markdown file names one of that file's headings, by
 * GitHub's rule. Links to {@code http(s):} and {@code mailto:} and links to an anchor of the same
 * document are left out; so are fenced code blocks and code spans. Tagged {@code build}: it reads the
 * checkout.
 */
@Tag("build")
class DocLinksTest {
    /** The end of an inline link or image, {@code ](target)} or {@code ](target "title")}. */
    private static final Pattern INLINE = Pattern.compile("\\]\\(\\s*<?([^)\\s>]+)>?(?:\\s+\"[^\"]*\")?\\s*\\)");
    /** A reference definition, {@code [name]: target}. */
    private static final Pattern REFERENCE = Pattern.compile("^ {0,3}\\[[^\\]]+\\]:\\s*<?([^\\s>]+)>?");
    private static final Pattern HEADING = Pattern.compile("^ {0,3}(#{1,6})\\s+(.*?)(?:\\s+#+)?\\s*$");
    private static final Pattern FENCE = Pattern.compile("^ {0,3}(```|~~~)");
    private static final Pattern CODE_SPAN = Pattern.compile("(`+).*?\\1");
    private static final Pattern HEADING_LINK = Pattern.compile("!?\\[([^\\]]*)\\]\\([^)]*\\)");
    private static final Pattern EXTERNAL = Pattern.compile("^(?i)(https?:|mailto:)");

    private static final Path ROOT = Path.of("").toAbsolutePath().normalize();

    /** The documents whose links are checked. */
    static List<Path> documents() throws IOException {
        List<Path> documents = new ArrayList<>(List.of(Path.of("README.md")));
        try (Stream<Path> guides = Files.list(Path.of("src/site/markdown"))) {
            guides.filter(file -> file.getFileName().toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        documents.add(Path.of("benchmarks/README.md"));
        documents.add(Path.of("kernels/PERFORMANCE.md"));
        return documents;
    }

    @Test
    void everyRelativeLinkAndImageResolvesWithItsAnchor() throws IOException {
        List<String> broken = new ArrayList<>();
        int checked = 0;
        Map<Path, Set<String>> anchors = new HashMap<>();
        for (Path document : documents()) {
            List<String> lines = prose(Files.readAllLines(document));
            for (int i = 0; i < lines.size(); i++) {
                for (String target : targets(lines.get(i))) {
                    if (EXTERNAL.matcher(target).find() || target.startsWith("#")) {
                        continue;
                    }
                    checked++;
                    String where = document + ":" + (i + 1) + ": " + target;
                    int hash = target.indexOf('#');
                    String path = URLDecoder.decode((hash < 0 ? target : target.substring(0, hash)).replace("+", "%2B"),
                            StandardCharsets.UTF_8);
                    Path file = document.toAbsolutePath().getParent().resolve(path).normalize();
                    if (!file.startsWith(ROOT)) {
                        broken.add(where + " (outside the repository)");
                    } else if (!Files.exists(file)) {
                        broken.add(where + " (no such file)");
                    } else if (hash >= 0 && file.getFileName().toString().endsWith(".md")) {
                        String anchor = target.substring(hash + 1);
                        Set<String> headings = anchors.computeIfAbsent(file, DocLinksTest::headingAnchors);
                        if (!headings.contains(anchor)) {
                            broken.add(where + " (no heading #" + anchor + " in " + ROOT.relativize(file) + "; it has "
                                    + headings + ")");
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), broken, "broken links in the documentation");
        assertTrue(checked >= 50, "only " + checked + " relative links were found: is the link pattern right?");
    }

    @Test
    void anchorsFollowGitHubsRule() {
        assertEquals(Set.of("first-example-a-linear-layer-as-a-cuda-graph", "the-cuda-runtime-is-not-found",
                "results-nvidia-h200-2026-11-29-resultsnvidia-h200-2026-11-29", "targets-and-where-they-were-missed",
                "a-warning-about-a-restricted-method-or-an-illegalcallerexception", "gemm_shape-µs",
                "changes", "changes-1", "see-the-docs"),
                headingAnchors(List.of("# First example: a Linear layer as a CUDA graph",
                        "## The CUDA runtime is not found", "```sh", "# not a heading", "```",
                        "## Results: NVIDIA H200, 2026-11-29 (`results/nvidia-h200-2026-11-29/`)",
                        "### Targets, and where they were missed",
                        "### A warning about a restricted method, or an `IllegalCallerException`",
                        "#### gemm_shape (µs) ###", "## Changes", "## Changes", "## See [the docs](x.md)")));
    }

    /** The lines outside fenced code blocks, with code spans removed; the line numbers stay. */
    private static List<String> prose(List<String> lines) {
        List<String> prose = new ArrayList<>();
        boolean fenced = false;
        for (String line : lines) {
            if (FENCE.matcher(line).find()) {
                fenced = !fenced;
                prose.add("");
            } else {
                prose.add(fenced ? "" : CODE_SPAN.matcher(line).replaceAll(""));
            }
        }
        return prose;
    }

    private static List<String> targets(String line) {
        List<String> targets = new ArrayList<>();
        Matcher inline = INLINE.matcher(line);
        while (inline.find()) {
            targets.add(inline.group(1));
        }
        Matcher reference = REFERENCE.matcher(line);
        if (reference.find()) {
            targets.add(reference.group(1));
        }
        return targets;
    }

    private static Set<String> headingAnchors(Path file) {
        try {
            return headingAnchors(Files.readAllLines(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * GitHub's anchors for a document's headings: the heading's text (a link's text, not its
     * target) in lower case, with every character but letters, digits, {@code _}, {@code -} and spaces
     * dropped, and each space a {@code -}; a repeated anchor gets {@code -1}, {@code -2} and so on.
     */
    static Set<String> headingAnchors(List<String> lines) {
        Set<String> anchors = new LinkedHashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        boolean fenced = false;
        for (String line : lines) {
            if (FENCE.matcher(line).find()) {
                fenced = !fenced;
                continue;
            }
            Matcher heading = HEADING.matcher(line);
            if (fenced || !heading.matches()) {
                continue;
            }
            String text = HEADING_LINK.matcher(heading.group(2)).replaceAll("$1").toLowerCase(Locale.ROOT);
            StringBuilder slug = new StringBuilder();
            text.codePoints().forEach(c -> {
                if (c == ' ') {
                    slug.append('-');
                } else if (Character.isLetterOrDigit(c) || c == '-' || c == '_'
                        || Character.getType(c) == Character.NON_SPACING_MARK) {
                    slug.appendCodePoint(c);
                }
            });
            String base = slug.toString();
            int count = seen.merge(base, 1, Integer::sum);
            anchors.add(count == 1 ? base : base + "-" + (count - 1));
        }
        return anchors;
    }
}

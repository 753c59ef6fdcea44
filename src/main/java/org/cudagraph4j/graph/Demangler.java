package org.cudagraph4j.graph;

/**
 * Turns the Itanium-mangled name of a C++ kernel into its qualified name, e.g.
 * {@code _ZN8cublasLt8epilogue4impl12globalKernelILi8EEEvPf} into
 * {@code cublasLt::epilogue::impl::globalKernel<8>}. It covers nested names, integer and builtin
 * template arguments, which is what kernel names use; for anything else it returns the input, so
 * a name is never made wrong, only left mangled.
 */
final class Demangler {
    private final String text;
    private int position;

    private Demangler(String text) {
        this.text = text;
        this.position = 2;
    }

    static String demangle(String name) {
        if (!name.startsWith("_Z")) {
            return name;
        }
        try {
            return new Demangler(name).name();
        } catch (RuntimeException unsupported) {
            return name;
        }
    }

    private String name() {
        if (peek() == 'N') {
            position++;
            StringBuilder qualified = new StringBuilder();
            while (peek() != 'E') {
                if (peek() == 'I') {
                    qualified.append(templateArguments());
                } else {
                    if (!qualified.isEmpty()) {
                        qualified.append("::");
                    }
                    qualified.append(sourceName());
                }
            }
            position++;
            return qualified.toString();
        }
        String simple = sourceName();
        return peek() == 'I' ? simple + templateArguments() : simple;
    }

    private String sourceName() {
        int start = position;
        while (Character.isDigit(peek())) {
            position++;
        }
        if (start == position) {
            throw new IllegalArgumentException("no source name at " + position);
        }
        int length = Integer.parseInt(text.substring(start, position));
        String name = text.substring(position, position + length);
        position += length;
        return name;
    }

    private String templateArguments() {
        position++;
        StringBuilder arguments = new StringBuilder("<");
        while (peek() != 'E') {
            if (arguments.length() > 1) {
                arguments.append(", ");
            }
            arguments.append(templateArgument());
        }
        position++;
        return arguments.append('>').toString();
    }

    private String templateArgument() {
        char c = text.charAt(position++);
        if (c == 'L') {
            builtin();
            int start = position;
            if (peek() == 'n') {
                position++;
            }
            while (Character.isDigit(peek())) {
                position++;
            }
            String value = text.substring(start, position).replace('n', '-');
            if (text.charAt(position++) != 'E') {
                throw new IllegalArgumentException("unterminated literal");
            }
            return value;
        }
        position--;
        return builtin();
    }

    private String builtin() {
        char c = text.charAt(position++);
        return switch (c) {
            case 'v' -> "void";
            case 'b' -> "bool";
            case 'c' -> "char";
            case 'a' -> "signed char";
            case 'h' -> "unsigned char";
            case 's' -> "short";
            case 't' -> "unsigned short";
            case 'i' -> "int";
            case 'j' -> "unsigned int";
            case 'l' -> "long";
            case 'm' -> "unsigned long";
            case 'x' -> "long long";
            case 'y' -> "unsigned long long";
            case 'f' -> "float";
            case 'd' -> "double";
            default -> throw new IllegalArgumentException("unsupported type code " + c);
        };
    }

    private char peek() {
        return text.charAt(position);
    }
}

"""A MyST page read as prose: the book's own MyST parser (markdown-it-py with the MyST plugins and the extensions of
``_config.yml``) turns a page into a syntax tree, and :func:`iter_blocks` yields its paragraphs, list items, table
rows, headings, definition terms and directive titles as :class:`Block` s. A directive's body is parsed again as
MyST (MyST's own directive parser splits argument, options and body), so prose inside an admonition, exercise,
solution or dropdown keeps its context and the page's line numbers. Inside a block, roles, code, math, link
targets and URLs become single private-use placeholder characters (:class:`Masked`): glue roles in one range, cite
roles in another, everything else in a third, so a regex over the text sees only prose and glued numbers.

Used by :mod:`x4lib.book.claims` (the claims checker) and the tests of the book's pages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from docutils.parsers.rst import Directive
from markdown_it.renderer import RendererHTML
from markdown_it.tree import SyntaxTreeNode
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.directives import parse_directive_text
from myst_parser.parsers.mdit import create_md_parser

GLUE_BASE, CITE_BASE, OTHER_BASE = 0xF0000, 0xF4000, 0xF8000
GLUE_CHARS = "\U000F0000-\U000F3FFF"


@dataclass(frozen=True)
class Masked:
    """A block's prose with every role, code span, math span, HTML tag and URL as one private-use character.

    Glue roles get a character in the "glue" range, so a claim regex can treat them as numbers; cite roles
    one in the "cite" range; everything else one in the "other" range (never a number). originals maps each
    placeholder to its source text; cite_keys maps each cite placeholder to its keys. Newlines inside a
    replaced span are kept after its placeholder, so line numbers still count.
    """
    text: str
    originals: dict = field(default_factory=dict)
    cite_keys: dict = field(default_factory=dict)

    def restore(self, s: str) -> str:
        """Put the source text back in place of the placeholders of ``s``."""
        return "".join(self.originals.get(ch, ch) for ch in s)


@dataclass(frozen=True)
class Block:
    """A unit of prose: a paragraph, list item, table row, heading, definition term or directive title.

    masked is its text (paragraphs of one list item joined by as many newlines as lie between them); line is
    the 1-based page line of its first line. context is "prose", "exercise" (an exercise statement or title)
    or "solution"; label is the exercise label for both. given_scope is True when the block sits under an
    Assumptions/Givens heading or is a list item after an assumptions lead-in. header is the header row's
    text for table body rows ("" otherwise).
    """
    kind: str
    line: int
    masked: Masked
    context: str = "prose"
    label: str | None = None
    given_scope: bool = False
    header: str = ""

    @property
    def text(self) -> str:
        """The block as written, roles and code included (emphasis and link markup dropped)."""
        return self.masked.restore(self.masked.text)


# --------------------------------------------------------------------------------------------------
# Reading a page: the MyST syntax tree becomes prose blocks
# --------------------------------------------------------------------------------------------------

# The MyST extensions of the book (``parse.myst_enable_extensions`` in _config.yml; a test keeps them equal).
MYST_EXTENSIONS = ("amsmath", "colon_fence", "deflist", "dollarmath", "substitution")
_MD = create_md_parser(MdParserConfig(enable_extensions=set(MYST_EXTENSIONS)), RendererHTML)

# Directives whose body is not prose (code, math, data, machinery).
_SKIP_DIRECTIVES = {
    "code-cell", "code", "code-block", "sourcecode", "literalinclude", "math", "raw", "bibliography",
    "toctree", "tableofcontents", "mermaid", "graphviz", "eval-rst", "eval-rest", "include", "csv-table",
    "jupyter-execute", "ipython", "doctest", "testcode", "glossary-code",
}
# Directives whose argument is a label, path or key rather than a title to read.
_ARG_NOT_PROSE = {
    "solution", "solution-start", "solution-end", "exercise-end", "figure", "image", "glue:figure",
    "glue", "glue:any", "glue:md", "glue:math", "literalinclude", "include", "bibliography",
}
#: a sentence that states an assumption (also read by x4lib.book.claims: a number in it is a given)
#: ("a wrong assumption", "a hidden assumption" name a mistake, not a given: those do not count)
GIVEN_SENTENCE = re.compile(r"(?i)\b(givens?|assum(?:e|es|ed|ing)|(?<!wrong )(?<!false )(?<!bad )(?<!hidden )"
                            r"(?<!faulty )(?<!mistaken )assumptions?|supuest[oa]s?|supon\w*|supong\w*|suponiendo)\b")
_GIVEN_HEADING = re.compile(r"(?i)\b(assumptions?|givens?|supuestos?)\b")
_URL = re.compile(r"<?https?://[^\s>)]+>?")          # a bare URL is a text token (linkify is off)
# in a raw HTML block; a comment left open runs to the end (as in HTML), so the scan stays linear
_HTML = re.compile(rf"<!--(?:(?!-->).)*(?:-->|\Z)|</?[A-Za-z][^<>]*>|{_URL.pattern}", re.S)


class _AnyDirective(Directive):
    """Any directive, for MyST's directive parser: an optional one-line argument, any options, a body."""
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"label": str}        # not empty, so an options block is looked for; all options are read


class _Masker:
    """Builds a :class:`Masked` text from inline syntax-tree nodes, one placeholder per non-prose span."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.originals: dict[str, str] = {}
        self.cite_keys: dict[str, tuple[str, ...]] = {}
        self.counters = {"glue": GLUE_BASE, "cite": CITE_BASE, "other": OTHER_BASE}

    def put(self, kind: str, source: str) -> str:
        ch = chr(self.counters[kind])
        self.counters[kind] += 1
        self.originals[ch] = source
        self.parts.append(ch + "\n" * source.count("\n"))
        return ch

    def add(self, text: str, not_prose: re.Pattern = _URL) -> None:
        """Plain prose; what ``not_prose`` matches in it (bare URLs) becomes placeholders."""
        pos = 0
        for span in not_prose.finditer(text):
            self.parts.append(text[pos:span.start()])
            self.put("other", span.group(0))
            pos = span.end()
        self.parts.append(text[pos:])

    def lines(self) -> int:
        return sum(p.count("\n") for p in self.parts)

    def inline(self, node: SyntaxTreeNode) -> None:
        """Add the children of an ``inline`` node: prose as text, roles, code, math and HTML as placeholders."""
        for child in node.children:
            t = child.type
            if t == "text":
                self.add(child.content)
            elif t in ("softbreak", "hardbreak"):
                self.parts.append("\n")
            elif t in ("em", "strong") or (t == "link" and child.markup not in ("autolink", "linkify")):
                self.inline(child)                      # the words of an emphasis or a link are prose
            elif t == "myst_role":
                name = child.meta["name"]
                source = f"{{{name}}}`{child.content}`"
                if name.startswith("glue"):
                    self.put("glue", source)
                elif name.startswith(("cite", "footcite")):
                    body = re.sub(r"\{[^}]*\}", "", child.content)     # {cite:p}`{see}key{p. 3}` pre/post text
                    self.cite_keys[self.put("cite", source)] = tuple(
                        k.strip() for k in re.split(r"[,;]", body) if k.strip())
                else:
                    self.put("other", source)
            elif t == "link":                           # <https://...>
                self.put("other", f"<{child.attrs.get('href', '')}>")
            else:                                       # code, math, HTML, images, footnote refs, substitutions
                self.put("other", f"{child.markup}{child.content}{child.markup}")

    def build(self) -> Masked:
        return Masked("".join(self.parts), self.originals, self.cite_keys)


Context = tuple[str, str | None]     # ("exercise" | "solution", label) from an enclosing directive


class _Reader:
    """Walks a page's syntax tree, and the tree of every directive body, yielding :class:`Block` s in page order.

    State kept across the page: the last heading (Assumptions/Givens sections) and the labels opened by
    ``{exercise-start}`` / ``{solution-start}`` until their ``-end``. ``ctx`` passed down the tree is the
    context set by an enclosing ``{exercise}`` or ``{solution}``, or None; ``line0`` is the page line before
    the first line of the text being walked.
    """

    def __init__(self) -> None:
        self.heading = ""
        self.exercise: str | None = None
        self.solution: str | None = None

    def page(self, text: str, line0: int = 0, ctx: Context | None = None) -> Iterator[Block]:
        """The blocks of MyST ``text`` whose first line is page line ``line0 + 1``."""
        yield from self.nodes(SyntaxTreeNode(_MD.parse(text)).children, line0, ctx)

    def nodes(self, nodes: Iterable[SyntaxTreeNode], line0: int, ctx: Context | None,
              item_given: bool | None = None) -> Iterator[Block]:
        """Blocks of sibling nodes. item_given is None outside a list item, else whether the item's list
        follows an assumptions lead-in; consecutive paragraphs of a list item are one block."""
        item: list[SyntaxTreeNode] = []
        lead = ""                                   # the paragraph just before: a list's lead-in
        for node in [*nodes, None]:
            if item and (node is None or node.type != "paragraph"):
                block = self.block("item", item[0], _prose(item), line0, ctx, bool(item_given))
                lead, item = block.masked.text, []
                yield block
            if node is None:
                break
            t = node.type
            if t == "paragraph" and item_given is not None:
                item.append(node)
                continue
            if t == "paragraph":
                block = self.block("paragraph", node, _prose([node]), line0, ctx)
                lead = block.masked.text
                yield block
                continue
            if t in ("bullet_list", "ordered_list"):
                given = bool(item_given) or bool(GIVEN_SENTENCE.search(lead) or _GIVEN_HEADING.search(lead))
                for li in node.children:
                    yield from self.nodes(li.children, line0, ctx, item_given=given)
            elif t == "heading":
                heading = _prose([node])
                self.heading = heading.text
                yield self.block("heading", node, heading, line0, ctx)
            elif t == "dt":
                yield self.block("term", node, _prose([node]), line0, ctx)
            elif t == "html_block":                 # raw HTML renders its text: read it without tags and comments
                m = _Masker()
                m.add(node.content.rstrip("\n"), _HTML)
                yield self.block("paragraph", node, m.build(), line0, ctx)
            elif t == "table":
                yield from self.table(node, line0, ctx)
            elif t in ("fence", "colon_fence"):
                yield from self.directive(node, line0, ctx)
            elif t != "inline":                     # block quotes, definitions, footnotes: read what they hold
                yield from self.nodes(node.children, line0, ctx)
            lead = ""                               # code, math, front matter, targets...: skipped

    def block(self, kind: str, first: SyntaxTreeNode, masked: Masked, line0: int, ctx: Context | None,
              given: bool = False, header: str = "") -> Block:
        """A Block on ``first``'s line, in the context ``ctx`` or else that of an open -start/-end pair."""
        context, label = ctx or (("exercise", self.exercise) if self.exercise is not None else
                                 ("solution", self.solution) if self.solution is not None else ("prose", None))
        given = given or bool(_GIVEN_HEADING.search(self.heading))
        return Block(kind, line0 + first.map[0] + 1, masked, context, label, given, header)

    def table(self, table: SyntaxTreeNode, line0: int, ctx: Context | None) -> Iterator[Block]:
        """One block per row (header row included), cells joined as "| a | b |"; body rows carry the header."""
        header = ""
        for section in table.children:              # thead, tbody
            for row in section.children:
                m = _Masker()
                for cell in row.children:
                    m.add("| ")
                    for inline in cell.children:
                        m.inline(inline)
                    m.add(" ")
                m.add("|")
                block = self.block("row", row, m.build(), line0, ctx, header=header)
                header = block.text if section.type == "thead" else header
                yield block

    def directive(self, node: SyntaxTreeNode, line0: int, ctx: Context | None) -> Iterator[Block]:
        """A ``{name}`` fence: its title, and its body read as MyST. Code fences and _SKIP_DIRECTIVES: nothing."""
        info = node.info.split(maxsplit=1)
        if not (info and info[0].startswith("{") and info[0].endswith("}")):
            if node.type == "colon_fence":         # a ":::name" div: its content is MyST
                yield from self.page(node.content, line0 + node.map[0] + 1, ctx)
            return                                  # a code fence
        name, content, shift = info[0][1:-1], node.content, 0
        if name in _SKIP_DIRECTIVES:
            return
        if node.type == "colon_fence" and content.startswith(":::"):
            content, shift = "\n" + content, -1     # as MyST does: a nested fence first, not an options block
        d = parse_directive_text(_AnyDirective, info[1] if len(info) > 1 else "", content, validate_options=False)
        arg = " ".join(d.arguments).strip()
        label = None if d.options.get("label") is None else str(d.options["label"])
        if name in ("solution-start", "solution-end"):
            self.solution = (arg.split()[0] if arg else None) if name == "solution-start" else None
            return
        if name in ("exercise-start", "exercise-end"):
            self.exercise = (label or "") if name == "exercise-start" else None
            return
        if name == "exercise":
            ctx = ("exercise", label)
        elif name == "solution":
            ctx = ("solution", arg.split()[0] if arg else None)
        if arg and name not in _ARG_NOT_PROSE:      # a title: read it as prose
            yield self.block("title", node, _prose(SyntaxTreeNode(_MD.parseInline(arg)).children), line0, ctx)
        yield from self.page("\n".join(d.body), line0 + node.map[0] + 1 + d.body_offset + shift, ctx)


def _prose(nodes: list[SyntaxTreeNode]) -> Masked:
    """The inline text of paragraphs, headings, terms (or of ``inline`` nodes), apart by as many newlines as
    the page has between them, so that a claim's line is the block's line plus the newlines before it."""
    m = _Masker()
    for node in nodes:
        if m.parts:
            m.parts.append("\n" * max(1, node.map[0] - nodes[0].map[0] - m.lines()))
        m.inline(node if node.type == "inline" else node.children[0])
    return m.build()


def iter_blocks(text: str) -> Iterator[Block]:
    """Split a MyST markdown page into prose blocks, skipping everything that is not prose.

    >>> page = "---\\nk: 1\\n---\\n# T\\n\\nA 5 W lamp.\\n\\n```{code-cell} ipython3\\nx = 7\\n```\\n- item 9 %\\n"
    >>> [(b.kind, b.line, b.text) for b in iter_blocks(page)]
    [('heading', 4, 'T'), ('paragraph', 6, 'A 5 W lamp.'), ('item', 11, 'item 9 %')]
    """
    return _Reader().page(text)

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/programming.md, the programmer's reference manual, documents what
the device ABI header hw/rnic/rnic_hw.h defines.

The lists come from the header itself: every RNIC_REG_* register, every
member of every enum (command opcodes and statuses, work request and
completion opcodes, completion statuses, event types, and the rest),
every other RNIC_* constant and every struct rnic_*.  A name the header
gains fails this test until the manual names it.  Where the manual gives a
value, a structure size or a structure's field offsets in a table, they
must be the header's; and every RNIC_* name the manual uses must exist."""

import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADER = os.path.join(ROOT, "hw", "rnic", "rnic_hw.h")
MANUAL = os.path.join(ROOT, "docs", "programming.md")

# Names the header defines that the manual need not document.
EXEMPT = {
    "RNIC_HW_H": "the header's include guard",
    "RNIC_ABI_ASSERT": "a build-time assertion helper, no part of the "
                       "device interface",
    "RNIC_SIZE_CHECK": "a build-time assertion helper; the sizes it asserts "
                       "are checked against the manual's structure index",
}

# The categories that must exist in the header (a renamed enum must not
# make its category silently empty).
ENUM_CATEGORIES = [
    ("command opcodes", "rnic_cmd_opcode"),
    ("command statuses", "rnic_cmd_status"),
    ("work request opcodes", "rnic_wr_opcode"),
    ("completion opcodes", "rnic_wc_opcode"),
    ("completion statuses", "rnic_wc_status"),
    ("event types", "rnic_eqe_type"),
]

PRIMITIVES = {
    "uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "uint64_t": 8,
    "rnic_le16": 2, "rnic_le32": 4, "rnic_le64": 8,
}

WORD = r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])"


def strip_comments(text):
    """C comments out, line count kept; continuation lines joined."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return text.replace("\\\n", " ")


def split_decls(body):
    """Top-level declarations of a struct or union body."""
    decls, depth, cur = [], 0, []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == ";" and depth == 0:
            decls.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    return [d for d in decls if d]


def matching_brace(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


class Header:
    """What rnic_hw.h defines: constants, enums, structures, sizes."""

    def __init__(self, text):
        code = strip_comments(text)
        self.defines = {}           # name -> expression, None if a macro
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(RNIC_\w+)(\()?(.*)$",
                             code, re.M):
            self.defines.setdefault(m.group(1),
                                    None if m.group(2) else m.group(3).strip())
        self.enums = {}             # enum -> [(member, expression or None)]
        for m in re.finditer(r"\benum\s+(rnic_\w+)\s*\{(.*?)\}\s*;", code,
                             re.S):
            members = []
            for item in m.group(2).split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, expr = item.partition("=")
                members.append((name.strip(), expr.strip() or None))
            self.enums[m.group(1)] = members
        self.struct_bodies = {}     # struct -> body text
        for m in re.finditer(r"^struct\s+(rnic_\w+)\s*\{", code, re.M):
            end = matching_brace(code, m.end() - 1)
            self.struct_bodies[m.group(1)] = code[m.end():end]
        self.size_checks = {}       # struct -> expression
        for m in re.finditer(r"RNIC_SIZE_CHECK\(\s*struct\s+(rnic_\w+)\s*,"
                             r"\s*([^)]+?)\s*\)\s*;", code):
            self.size_checks[m.group(1)] = m.group(2)
        self._values = {}
        for members in self.enums.values():
            nxt = 0
            for name, expr in members:
                self._values[name] = expr if expr is not None else str(nxt)
                nxt = self.value(name) + 1
        self._layouts = {}

    # ---- values ----

    def constants(self):
        """Every name with an integer value: defines and enum members."""
        names = [n for n, e in self.defines.items() if e]
        return names + list(self._values)

    def value(self, name, depth=0):
        expr = self._values.get(name, self.defines.get(name))
        if expr is None:
            raise KeyError(name)
        return self.evaluate(expr, depth + 1)

    def evaluate(self, expr, depth=0):
        if depth > 20:
            raise ValueError("recursion evaluating %r" % expr)
        expr = re.sub(r"sizeof\s*\(\s*struct\s+(rnic_\w+)\s*\)",
                      lambda m: str(self.layout(m.group(1))[0]), expr)
        expr = re.sub(r"\b(RNIC_\w+)\b",
                      lambda m: "(%d)" % self.value(m.group(1), depth), expr)
        expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)"
                      r"(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", expr)
        if not re.fullmatch(r"[0-9a-fA-FxX()+\-*/%<>|&^~ \t]*", expr):
            raise ValueError("cannot evaluate %r" % expr)
        return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, {}))

    # ---- structure layouts ----

    def _decl(self, decl):
        """(size, align, label) of one member declaration."""
        if decl.startswith("union"):
            open_at = decl.index("{")
            close_at = matching_brace(decl, open_at)
            members = [self._decl(d)
                       for d in split_decls(decl[open_at + 1:close_at])]
            # An anonymous union is named for its members: "a/b".
            name = decl[close_at + 1:].strip() or \
                "/".join(label for _, _, label in members)
            align = max(a for _, a, _ in members)
            size = max(s for s, _, _ in members)
            return -(-size // align) * align, align, name
        m = re.fullmatch(r"(struct\s+\w+|\w+)\s+(\w+)\s*(?:\[(.+)\])?", decl)
        if not m:
            raise ValueError("cannot parse member %r" % decl)
        ctype, name, count = m.groups()
        if ctype.startswith("struct"):
            size, align, _ = self.layout(ctype.split()[1])
        else:
            size = align = PRIMITIVES[ctype]
        if count is not None:
            n = self.evaluate(count)
            return size * n, align, "%s[%d]" % (name, n)
        return size, align, name

    def layout(self, struct):
        """(size, align, [(offset, size, label)]) with C's natural layout."""
        if struct not in self._layouts:
            off, align, fields = 0, 1, []
            for decl in split_decls(self.struct_bodies[struct]):
                size, al, label = self._decl(decl)
                off = -(-off // al) * al
                fields.append((off, size, label))
                off += size
                align = max(align, al)
            self._layouts[struct] = (-(-off // align) * align, align, fields)
        return self._layouts[struct]


def table_rows(lines):
    """(line number, cells) of every Markdown table row, header rows too."""
    for no, line in enumerate(lines, 1):
        if line.startswith("|") and line.rstrip().endswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
            yield no, [c.strip().replace("\\|", "|") for c in cells]


def code_span(cell):
    m = re.fullmatch(r"`([^`]+)`", cell)
    return m.group(1) if m else None


def cell_int(cell):
    c = cell.strip("`").strip()
    m = re.fullmatch(r"bit (\d+)", c)
    if m:
        return 1 << int(m.group(1))
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", c):
        return int(c, 16)
    if re.fullmatch(r"\d+", c):
        return int(c, 10)
    return None


def field_tables(lines):
    """Tables whose header row is 'offset | size | field | ...': for each,
    the line of its header, the paragraph before it, and its rows."""
    tables, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\|\s*offset\s*\|\s*size\s*\|\s*field\s*\|", line):
            start = i
            para, j = [], i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            while j >= 0 and lines[j].strip() and not lines[j].startswith("|"):
                para.insert(0, lines[j])
                j -= 1
            rows = []
            i += 2              # the header and the delimiter row
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in
                         re.split(r"(?<!\\)\|", lines[i].strip()[1:-1])]
                rows.append((i + 1, cells))
                i += 1
            tables.append((start + 1, " ".join(para), rows))
            continue
        i += 1
    return tables


class ProgrammingManualTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(HEADER, encoding="utf-8") as f:
            cls.header = Header(f.read())
        with open(MANUAL, encoding="utf-8") as f:
            cls.text = f.read()
        cls.lines = cls.text.splitlines()

    # ---- helpers ----

    def documented(self, name):
        return re.search(WORD % re.escape(name), self.text) is not None

    def assert_documented(self, what, names):
        missing = [n for n in names
                   if n not in EXEMPT and not self.documented(n)]
        if missing:
            self.fail("docs/programming.md does not document these %s that "
                      "hw/rnic/rnic_hw.h defines:\n  %s\nName each in the "
                      "manual exactly as the header spells it (a table row "
                      "or a code span saying what it is), or, for an "
                      "internal helper, add it to EXEMPT in %s with the "
                      "reason." % (what, "\n  ".join(missing),
                                   os.path.relpath(__file__, ROOT)))

    # ---- the header is what this test expects ----

    def test_header_parsed(self):
        for title, enum in ENUM_CATEGORIES:
            self.assertTrue(self.header.enums.get(enum),
                            "hw/rnic/rnic_hw.h no longer defines enum %s "
                            "(%s): update ENUM_CATEGORIES in this test" %
                            (enum, title))
        self.assertTrue(any(n.startswith("RNIC_REG_")
                            for n in self.header.defines))
        self.assertTrue(self.header.struct_bodies)

    def test_exemptions_exist(self):
        stale = [n for n in EXEMPT if n not in self.header.defines]
        if stale:
            self.fail("EXEMPT names what hw/rnic/rnic_hw.h no longer "
                      "defines: %s" % ", ".join(stale))

    # ---- every name the header defines is in the manual ----

    def test_registers(self):
        self.assert_documented("registers", [n for n in self.header.defines
                                             if n.startswith("RNIC_REG_")])

    def test_enum_categories(self):
        for title, enum in ENUM_CATEGORIES:
            with self.subTest(enum=enum):
                self.assert_documented(
                    "%s (enum %s)" % (title, enum),
                    [n for n, _ in self.header.enums.get(enum, [])])

    def test_other_enum_members(self):
        named = {e for _, e in ENUM_CATEGORIES}
        for enum, members in self.header.enums.items():
            if enum in named:
                continue
            with self.subTest(enum=enum):
                self.assert_documented("members of enum %s" % enum,
                                       [n for n, _ in members])

    def test_enums_named(self):
        self.assert_documented("enums", list(self.header.enums))

    def test_other_constants(self):
        self.assert_documented("constants",
                               [n for n in self.header.defines
                                if not n.startswith("RNIC_REG_")])

    def test_structures(self):
        missing = [s for s in self.header.struct_bodies
                   if not re.search(r"struct\s+%s\b" % s, self.text)]
        if missing:
            self.fail("docs/programming.md does not document these "
                      "structures of hw/rnic/rnic_hw.h: %s" %
                      ", ".join("struct " + s for s in missing))

    # ---- what the manual says agrees with the header ----

    def test_structure_sizes(self):
        """The structure index gives each structure's asserted size."""
        sizes = {}
        for _, cells in table_rows(self.lines):
            m = re.fullmatch(r"`struct (rnic_\w+)`", cells[0])
            if m and len(cells) > 1 and cell_int(cells[1]) is not None:
                sizes[m.group(1)] = cell_int(cells[1])
        problems = []
        for struct in self.header.struct_bodies:
            size = self.header.layout(struct)[0]
            if struct in self.header.size_checks:
                asserted = self.header.evaluate(
                    self.header.size_checks[struct])
                self.assertEqual(size, asserted, "this test lays out struct "
                                 "%s differently from the header's assert" %
                                 struct)
            if struct not in sizes:
                problems.append("struct %s: no row `struct %s` | size in "
                                "the structure index" % (struct, struct))
            elif sizes[struct] != size:
                problems.append("struct %s: the manual says %d bytes, the "
                                "header %d" % (struct, sizes[struct], size))
        if problems:
            self.fail("\n".join(problems))

    def test_structure_layouts(self):
        """Each structure has one field table, with the header's offsets."""
        problems, seen = [], set()
        for line, para, rows in field_tables(self.lines):
            structs = set(re.findall(r"struct (rnic_\w+)`", para))
            structs &= set(self.header.struct_bodies)
            if len(structs) != 1:
                problems.append("line %d: the paragraph before this field "
                                "table must name exactly one structure "
                                "(it names %s)" %
                                (line, ", ".join(sorted(structs)) or "none"))
                continue
            struct = structs.pop()
            seen.add(struct)
            want = self.header.layout(struct)[2]
            got = [(cell_int(c[0]), cell_int(c[1]), code_span(c[2]))
                   for _, c in rows]
            for k in range(max(len(got), len(want))):
                g = got[k] if k < len(got) else None
                w = want[k] if k < len(want) else None
                if g != w:
                    where = rows[k][0] if k < len(rows) else line
                    problems.append(
                        "line %d, struct %s: the manual has (offset, size, "
                        "field) %s where the header has %s" %
                        (where, struct, g or "no row", w or "no field"))
        for struct in self.header.struct_bodies:
            if struct not in seen:
                problems.append("struct %s has no field table (offset | "
                                "size | field | ...) after a paragraph "
                                "naming it" % struct)
        if problems:
            self.fail("\n".join(problems))

    def test_table_values(self):
        """A table row that starts with a constant gives its value next."""
        known = set(self.header.constants())
        problems = []
        for line, cells in table_rows(self.lines):
            name = code_span(cells[0])
            if name not in known or len(cells) < 2:
                continue
            got = cell_int(cells[1])
            if got is None:
                continue
            want = self.header.value(name)
            if got != want:
                problems.append("line %d: %s is %s in the manual, %#x in "
                                "the header" % (line, name, cells[1], want))
        if problems:
            self.fail("\n".join(problems))

    def test_tables_well_formed(self):
        """Every row of a table has as many cells as its header, so that a
        '|' in a code span (write it '\\|') splits no cell."""
        problems, width = [], None
        for no, line in enumerate(self.lines, 1):
            if not line.startswith("|"):
                width = None
                continue
            cells = len(re.split(r"(?<!\\)\|", line.strip()[1:-1]))
            if width is None:
                width = cells
            elif cells != width:
                problems.append("line %d: %d cells in a table of %d" %
                                (no, cells, width))
        if problems:
            self.fail("\n".join(problems))

    def test_manual_names_exist(self):
        """Every RNIC_* name, struct and enum the manual uses is real."""
        names = set(self.header.defines) | set(self.header.constants())
        problems = set()
        for m in re.finditer(r"(?<![A-Za-z0-9_])(RNIC_[A-Z0-9_]*)(\*)?",
                             self.text):
            name, star = m.groups()
            if star or name.endswith("_"):
                if not any(n.startswith(name) for n in names):
                    problems.add(name + "*")
            elif name not in names:
                problems.add(name)
        for kind, table in (("struct", self.header.struct_bodies),
                            ("enum", self.header.enums)):
            for m in re.finditer(r"\b%s\s+(rnic_\w+)" % kind, self.text):
                if m.group(1) not in table:
                    problems.add("%s %s" % (kind, m.group(1)))
        if problems:
            self.fail("docs/programming.md names what hw/rnic/rnic_hw.h "
                      "does not define: %s" % ", ".join(sorted(problems)))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Writes the man pages of errorbusd and errorbusctl, and checks them.

  scripts/lib/manpages.py BIN_DIR MAN_DIR [--date YYYY-MM-DD] [--authors NAME] [--lint]

BIN_DIR holds errorbusd, errorbusctl and swift-argument-parser's generate-manual (any build:
.build-static/release for scripts/install, .build/debug for scripts/test). The pages go into
MAN_DIR/manN (man8/errorbusd.8, man1/errorbusctl.1, man1/errorbusctl.status.1, …, and
man5/errorbusd.yaml.5 where errorbusd writes it). errorbusd is a daemon (section 8),
errorbusctl a command (section 1). Their pages are generate-manual's, from each program's own
description of its arguments (--experimental-dump-help), with what generate-manual cannot
express put right:

- the argument parser lists its own `help` command as a subcommand of every program; errorbusd
  has no other, so its synopsis would show a subcommand it does not take: dropped there;
- a discussion's "Exit status:" list (`  N   text` lines) becomes the EXIT STATUS section, in
  place of the generic "exits 0 on success, and >0 if an error occurs"; a command's own page
  gets its program's list;
- a command's page is named errorbusctl.status in its NAME section (whatis cannot read a name
  with a space), and errorbusctl status elsewhere;
- a discussion's blank lines become paragraph breaks, and each sentence starts a line, as mdoc
  wants (mandoc warns otherwise); a paragraph break with nothing after it is dropped.

Pages a program writes whole are taken as it writes them (WHOLE_PAGES): the configuration
reference errorbusd.yaml(5), from `errorbusd --config-reference man`, with --date put in its
.Dd line.

--lint then fails unless `mandoc -T lint -W warning` and groff (`-mandoc -ww -z`) say nothing
about any page.
"""
import argparse, datetime, json, os, re, shutil, subprocess, sys, tempfile

PROGRAMS = (("errorbusd", 8, False), ("errorbusctl", 1, True))  # name, section, one page per command
# (program, its arguments that write the page to standard output, the page).
WHOLE_PAGES = (
    ("errorbusd", ["--config-reference", "man"], "errorbusd.yaml.5"),
)
EXIT_ENTRY = re.compile(r"^ {1,4}(\d+) +(\S.*)$")
UNBREAKABLE = re.compile(r"(?<![\\\w])[\w:-]*[./][\w:-][\w./:-]*")
SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\"'}][.?!]) +(?=[A-Z0-9(\"'{])")


def dump_help(binary):
    """The program's description of its arguments, without the parser's lone `help` command."""
    info = json.loads(subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True, text=True).stdout)
    command = info["command"]
    if [sub["commandName"] for sub in command.get("subcommands", [])] == ["help"]:
        del command["subcommands"]
    return info


def generate(bin_dir, output, date, authors):
    written = []
    with tempfile.TemporaryDirectory(prefix="errorbus-manpages-") as work:
        for name, section, multi_page in PROGRAMS:
            # generate-manual runs the program it is given with --experimental-dump-help: it is
            # given one that prints the corrected description.
            description = os.path.join(work, name + ".json")
            with open(description, "w") as file:
                json.dump(dump_help(os.path.join(bin_dir, name)), file)
            tool = os.path.join(work, name)
            with open(tool, "w") as file:
                file.write("#!/bin/sh\nexec cat '%s'\n" % description)
            os.chmod(tool, 0o755)
            pages = os.path.join(work, name + "-pages")
            os.makedirs(pages)
            command = [os.path.join(bin_dir, "generate-manual"), tool, "--section", str(section), "--authors", authors,
                       "--output-directory", pages]
            if date:
                command += ["--date", date]
            if multi_page:
                command.append("--multi-page")
            subprocess.run(command, check=True)
            texts = {page: open(os.path.join(pages, page)).read() for page in sorted(os.listdir(pages))}
            exit_list = exit_status(texts.get("%s.%d" % (name, section), ""))
            for page, text in texts.items():
                written.append(write(output, page, fix(text, exit_list)))
    for name, arguments, page in WHOLE_PAGES:
        text = subprocess.run([os.path.join(bin_dir, name)] + arguments, check=True, capture_output=True, text=True).stdout
        if date:
            text = re.sub(r"^\.Dd .*$", ".Dd " + datetime.date.fromisoformat(date).strftime("%B %-d, %Y"), text, count=1, flags=re.M)
        written.append(write(output, page, text))
    return written


def write(man_dir, page, text):
    """Writes `page` (name.section) into its section's directory of `man_dir`; returns its path."""
    directory = os.path.join(man_dir, "man" + page.rsplit(".", 1)[1])
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, page)
    with open(path, "w") as file:
        file.write(text)
    return path


def exit_status(page):
    """The `(status, text)` entries of the "Exit status:" list in a page's description."""
    entries, inside = [], False
    for line in page.splitlines():
        if line.strip() == "Exit status:":
            inside = True
        elif inside and EXIT_ENTRY.match(line):
            entries.append(list(EXIT_ENTRY.match(line).groups()))
        elif inside and entries and line.startswith("      ") and line.strip():
            entries[-1][1] += " " + line.strip()
        elif inside:
            break
    return entries


def name_command(page):
    """A command's page names itself "errorbusctl status", which whatis databases (lexgrog, and
    so lintian) cannot parse: its NAME becomes the page's name (errorbusctl.status, as `man`
    finds it) and every other mention the command as typed (errorbusctl status)."""
    match = re.search(r'^\.Nm "([^" ]+) ([^"]+)"$', page, flags=re.M)
    if not match:
        return page
    program, command = match.groups()
    page = page.replace(match.group(0), ".Nm %s.%s" % (program, command.replace(" ", ".")), 1)
    page = re.sub(r'^\.Nd "(.*)"$', r".Nd \1", page, count=1, flags=re.M)
    return re.sub(r"^\.Nm$", ".Nm %s Cm %s" % (program, command), page, flags=re.M)


def fix(page, exit_list):
    lines, out, skipping = name_command(page).splitlines(), [], False
    for line in lines:
        if line.strip() == "Exit status:" and exit_list:
            skipping = True
            continue
        if skipping:
            if EXIT_ENTRY.match(line) or (line.startswith("      ") and line.strip()):
                continue
            skipping = False
        if line == ".Ex -std" and exit_list:
            out.append(".Bl -tag -width Ds")
            for status, text in exit_list:
                out += [".It " + status] + sentences(text)
            out.append(".El")
        elif not line.strip():
            out.append(".Pp")
        elif line.startswith(("'", ".")) and not re.match(r"^\.[A-Z][a-z]|^\.\\\"", line):
            out.append("\\&" + line)
        elif line.startswith("."):
            out.append(line)
        else:
            out += sentences(line)
    # A paragraph break is dropped at the start or end of a section or list, before an item,
    # and when another follows it.
    cleaned = []
    for index, line in enumerate(out):
        following = out[index + 1] if index + 1 < len(out) else ".Sh"
        previous = cleaned[-1] if cleaned else ".Sh"
        if line == ".Pp" and (following.split(" ")[0] in (".Pp", ".It", ".El", ".Sh", ".Bl") or previous.split(" ")[0] in (".Sh", ".Pp", ".It", ".Bl")):
            continue
        cleaned.append(line)
    return "\n".join(cleaned) + "\n"


def sentences(text):
    """One line per sentence; a line that would start like a request is escaped, and paths and
    dotted names are never hyphenated."""
    lines = []
    for part in SENTENCE_END.split(text.strip()):
        part = UNBREAKABLE.sub(lambda match: "\\%" + match.group(0), part)
        lines.append("\\&" + part if part.startswith(("'", ".")) else part)
    return lines


def lint(pages):
    problems = []
    for page in pages:
        for command in (["mandoc", "-T", "lint", "-W", "warning", page], ["groff", "-mandoc", "-ww", "-z", page]):
            result = subprocess.run(command, capture_output=True, text=True)
            report = (result.stdout + result.stderr).strip()
            if report or result.returncode != 0:
                problems.append("%s (%s):\n%s" % (os.path.basename(page), command[0], report or "exit status %d" % result.returncode))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin_dir")
    parser.add_argument("output")
    parser.add_argument("--date")
    parser.add_argument("--authors", default="the errorbus developers")
    parser.add_argument("--lint", action="store_true")
    arguments = parser.parse_args()
    pages = generate(arguments.bin_dir, arguments.output, arguments.date, arguments.authors)
    if arguments.lint:
        for tool in ("mandoc", "groff"):
            if not shutil.which(tool):
                sys.exit("manpages: %s is not installed (Debian: apt-get install %s)" % (tool, tool))
        problems = lint(pages)
        if problems:
            sys.exit("manpages: the pages have warnings:\n" + "\n".join(problems))
        print("manpages: %d pages, no mandoc or groff warnings" % len(pages))


if __name__ == "__main__":
    main()

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanPrDescription, readPrTemplate } from "../../../src/engine/import/pr-description.js";
import { tmp } from "../../helpers.js";

/** A template in the shape of verl's: guidance under each heading, two checklists. */
const TEMPLATE = `<!-- Thank you for contributing! -->
### What does this PR do?

> Add a **concise** overview of what this PR aims to achieve. Reference related issues.

### Test

> For changes that can not be tested by CI, validate by experiment(s) and show results.

### Design & Code Changes

> Demonstrate the high-level design if this PR is complex, and list the specific changes.

\`\`\`python
# Add code snippet or script demonstrating how to use this
\`\`\`
`;

/** What GitHub's squash merge writes from it: re-wrapped at 72, the template of the PR's day, the author's words in between. */
const SQUASHED = `### What does this PR do?

Buckets are now reduced once per step, after the last gradient of a
repeated parameter arrives.

> Add a **concise** overview of what this PR aims to achieve. Reference
related issues.

<!-- Describe your change.
     Several lines of comment. -->

### Test

> For changes that can not be tested by CI, validate by experiment(s) and
show results.

### Design

> Demonstrate the high-level design if this PR is complex.

\`\`\`python
# Add code snippet or script demonstrating how to use this
\`\`\`

### Usage

\`\`\`python
ddp = DDP(model, overlap=True)
\`\`\`

## Before submitting

### Checks

- [x] I ran pre-commit
- [ ] Docs updated in [the
documentation](https://example.org/docs).

### Checklist Before Starting

- [ ] Search for similar PRs. Paste at least one query link here: ...
- [ ] Format the PR title as \`[{modules}] {type}: {description}\` (This
will be checked by the CI)
- \`{modules}\` include \`fsdp\`, \`megatron\`
`;

describe("cleanPrDescription", () => {
  it("keeps the author's prose and code, and drops the template: its guidance, comments, checklists and the headings left empty", () => {
    expect(cleanPrDescription(SQUASHED, TEMPLATE)).toBe(`### What does this PR do?

Buckets are now reduced once per step, after the last gradient of a
repeated parameter arrives.

### Usage

\`\`\`python
ddp = DDP(model, overlap=True)
\`\`\``);
  });

  it("without the template, still drops comments, checkbox lists, checklist sections and empty headings", () => {
    const out = cleanPrDescription(SQUASHED, null);
    expect(out).toContain("Buckets are now reduced once per step");
    expect(out).toContain("ddp = DDP(model, overlap=True)");
    for (const gone of ["<!--", "Describe your change", "- [", "Before submitting", "Checklist", "Search for similar PRs", "{modules}", "pre-commit"]) expect(out).not.toContain(gone);
    // The template's guidance cannot be told from prose without the template: it stays.
    expect(out).toContain("### Test\n\n> For changes that can not be tested by CI");
  });

  it("keeps a plain commit message as it is, and a list that is not a checklist", () => {
    const plain = "add subtracted its arguments.\n\n- add now adds\n- neg is unchanged";
    expect(cleanPrDescription(plain)).toBe(plain);
    expect(cleanPrDescription("")).toBe("");
  });
});

describe("readPrTemplate", () => {
  it("reads the templates GitHub would offer, from any of their places, and null when there is none", () => {
    const tree = tmp("pg-template-");
    expect(readPrTemplate(tree)).toBeNull();
    mkdirSync(join(tree, ".github", "PULL_REQUEST_TEMPLATE"), { recursive: true });
    writeFileSync(join(tree, ".github", "pull_request_template.md"), "main template");
    writeFileSync(join(tree, ".github", "PULL_REQUEST_TEMPLATE", "perf.md"), "perf template");
    expect(readPrTemplate(tree)).toBe("main template\n\nperf template");
  });
});

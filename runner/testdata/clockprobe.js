// The Node.js twin of clockprobe.py: Date.now() as each lease's token.
"use strict";
const readline = require("readline");
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
out({ hello: "locklab-lock/1", name: "clock probe (Node.js)", fencing: false });
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const req = JSON.parse(line);
  const ans = { id: req.id, outcome: "ok" };
  if (req.op === "acquire" || req.op === "extend") {
    ans.token = "t" + Date.now();
    ans.validity_ms = req.ttl_ms;
  }
  out(ans);
});

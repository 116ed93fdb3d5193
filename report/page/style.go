package page

// style is the one stylesheet of every page: inline, no external resource.
const style = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 110em; }
h1 { margin-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
th .sub { display: block; font-weight: normal; font-size: 85%; color: #555; }
table.verdicts td.cell { text-align: center; }
td .runs { display: block; font-size: 80%; margin-top: .2em; white-space: nowrap; }
td .runs .run { margin: 0 .2em; }
td.num { text-align: right; }
a { color: #0645ad; }
table.verdicts td.cell a { color: inherit; }
a.timeline, a.porcupine, a.campaign, span.no-picture, span.no-porcupine { margin-right: .4em; white-space: nowrap; }
span.no-picture, span.no-porcupine, .muted { color: #888; font-style: italic; }
dl.header { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
dl.header dt { font-weight: bold; }
dl.header dd { margin: 0; }
.verdict { font-size: 120%; padding: .3em .6em; display: inline-block; border-radius: .3em; }
.verdict.pass { background: #d4edda; } .verdict.fail { background: #f8d7da; } .verdict.inconclusive { background: #fff3cd; }
.explanation { font-size: 90%; color: #444; max-width: 50em; }
.ok, tr.pass { background: #d4edda; } .illegal, tr.safe { background: #f8d7da; } .unknown, tr.finding { background: #fff3cd; }
.error { background: #ffd8a8; } .na { background: #eee; color: #777; } .none { background: #e2e3e5; color: #555; }
.pending { background: #fff; color: #999; }
.runs .ok { color: #155724; background: none; } .runs .illegal { color: #a00; font-weight: bold; background: none; }
.runs .unknown, .runs .error { color: #8a6d00; background: none; }
.underload { background: #e5d4f5; } .runs .underload { color: #5a2d82; font-weight: bold; background: none; }
`

// cardStyle is the part of the stylesheet for the assessment's report card: its cards and
// findings (every page carries it, as it always did).
const cardStyle = `
.cards { display: flex; flex-wrap: wrap; gap: 1em; margin: 1em 0; }
.card { border: 1px solid #bbb; border-radius: .4em; padding: .2em 1em; min-width: 18em; }
.card.fail { border-color: #a00; } .card.pass { border-color: #155724; }
.finding { border-left: .4em solid #bbb; padding: .1em 1em; margin: 1em 0; }
.finding.unexpected { border-color: #a00; } .finding.avoidable { border-color: #d9822b; } .finding.inherent { border-color: #888; }
.class { text-transform: uppercase; font-size: 85%; padding: .1em .4em; border-radius: .2em; background: #eee; }
.class.unexpected { background: #f8d7da; } .class.avoidable { background: #ffe5cc; }
img.timeline { max-width: 100%; border: 1px solid #ddd; }
tr.check.failed { background: #f8d7da; } tr.check.passed { background: #d4edda; } tr.check.skipped { background: #eee; }
pre.plan { background: #f7f7f7; padding: .5em; overflow: auto; max-height: 30em; }
`

"""The compiler: one day of capture in, an activity-frame document and its renderings out.

Pure functions of the capture and the code (no clock, no disk writes, no Dagster). Modules, in
the order a day passes through them: sessionize (frames), enrich (input and actions), entities
(typed page references), document (schema v1), emit (JSON, YAML, Markdown, context block);
compile ties them together, tokens counts cl100k tokens, layouts maps keyboard layouts.
"""

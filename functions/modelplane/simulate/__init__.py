"""``modelplane simulate``: what-if planning for a whole fleet over a timeline.

A scenario (:mod:`.scenario`) is a fleet and a timeline of events; the engine
(:mod:`.engine`) applies each step's events to the simulated fleet (:mod:`.world`) and
runs the ModelDeployment function's own reading, scheduling and composing, pass after
pass, until the fleet settles; :mod:`.results` is what it records, shown as tables
(:mod:`.table`) or as a self-contained HTML report (:mod:`.report`, its charts SVG
drawn by :mod:`.svg`).

Offline and pure: nothing here talks to a cluster, and the function server never
imports this package.
"""

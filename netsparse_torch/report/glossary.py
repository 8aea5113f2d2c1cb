"""The words of the simulator's summary, report and figures, each explained once in plain words for a
reader without the NetSparse paper: ``netsparse-simulate --explain`` prints them, and docs/simulator.md
("Terms") holds the same table (a test keeps the two equal)."""

from __future__ import annotations

GLOSSARY: dict[str, str] = {
    "property": "the row of the dense matrix (K numbers) that one nonzero of the sparse matrix makes a node read; "
                "the unit of data the cluster moves",
    "K": "the numbers per property (fp32): 1 for SpMV, the feature width for SpMM and SDDMM",
    "idx": "a column id of the sparse matrix: which property a nonzero needs",
    "PR": "property request: a read of one property from the node that owns it (a read PR), or the property "
          "coming back (a response PR)",
    "RIG": "remote indexed gather: NetSparse's SmartNIC units that turn a node's stream of idxs into PRs "
           "(client units) and answer the PRs of other nodes (server units)",
    "SNIC": "SmartNIC: the network card with the RIG units, its own cores, cache (LLC) and memory",
    "Idx Filter": "a bit per property at the client unit: an idx whose property already arrived is dropped "
                  "(filtering)",
    "Pending PR Table": "the client unit's table of read PRs sent and not yet answered: a second idx for a pending "
                        "property waits for the same answer instead of sending another PR (coalescing); when it "
                        "is full the unit stalls",
    "filtered / coalesced": "idxs that need no PR of their own: already here (filtered) or already asked for "
                            "(coalesced); FC rate is their share of the remote idxs",
    "concatenation": "packing several PRs for one destination into one packet, at the NIC (after a delay) and "
                     "again in the ToR switch, so headers are paid once per packet",
    "ToR": "top-of-rack switch: the switch the nodes of one rack plug into",
    "spine": "the switches that connect the ToRs of a leaf-spine network",
    "middle pipe": "a ToR's pipeline between its ports that runs NetSparse's switch logic (property cache "
                   "lookup and concatenation), one PR per switch cycle",
    "property cache": "a cache of properties in each ToR (PCache): a read PR that hits it is answered in the "
                      "rack, without crossing the spine",
    "SUOpt": "the best sparsity-unaware exchange: every node receives every other node's whole block of "
             "properties (an all-gather) at line rate, no software cost",
    "SAOpt": "the best sparsity-aware exchange in software: each core (rank) asks for exactly the properties "
             "it needs, filtering only its own repeats, with a per-PR software cost",
    "tail node": "the node that finishes last; its time is the run's communication time",
    "critical path": "what the tail node's time was spent waiting for, resource by resource, summing to its time",
    "goodput (Gput)": "the tail node's useful payload (one property per distinct remote idx) over line rate x "
                      "time: the share of the link that carried data it needed",
    "line utilisation": "the tail node's wire bytes (payload and headers) over line rate x time",
    "Trfc vs SU": "SUOpt's bytes into the tail node over NetSparse's: how many times less traffic NetSparse moves",
    "#PR vs SA": "SAOpt's read PRs of the tail node over NetSparse's",
    "useful / redundant transfers": "a useful transfer is one property a node needs (each distinct remote "
                                    "idx once); redundant ones are the extra copies SU (all-gather) or SA (one per "
                                    "remote nonzero) move",
    "destination locality": "distinct destination nodes among 64 consecutive read PRs: few means PRs to one "
                            "node come together and pack well",
    "ablation": "NetSparse with its mechanisms switched on one after another (RIG, filter, coalesce, NIC "
                "concatenation, switch), to see what each adds",
    "leaf-spine / HyperX / Dragonfly": "network shapes: racks under spines; switches in a grid, each linked "
                                       "to its row and column; groups of switches linked all-to-all",
    "modeled": "computed by the analytic models and the simulator for the target cluster, not measured on "
               "this machine",
}
"""Each term and its meaning, in the order a reader meets them."""


def explain_text() -> str:
    """``netsparse-simulate --explain``: every term of :data:`GLOSSARY`, one per line."""
    import textwrap

    width = max(len(t) for t in GLOSSARY)
    lines = [textwrap.fill(meaning, 110, initial_indent=f"  {term:<{width}}  ", subsequent_indent=" " * (width + 4))
             for term, meaning in GLOSSARY.items()]
    return "Terms of the netsparse-simulate summary, report and figures (docs/simulator.md, \"Terms\"):\n\n" + \
        "\n".join(lines)


def glossary_table() -> list[str]:
    """The Markdown table docs/simulator.md holds."""
    from netsparse_torch.report import markdown as md

    return md.table(["term", "meaning"], GLOSSARY.items())

"""``dream.mode = "pipeline"`` (the default): a consolidation that somnid drives, in stages.

1. somnid reads each pending log itself and cuts it into windows that fit the model's
   context, each line numbered, with its speaker and time; a log of people among
   themselves is read one person's lines at a time (:mod:`.windows`).
2. For each window the model gives one structured answer: the memories worth keeping, each
   with whom it is about and the lines it comes from (:mod:`.runner`, prompts in
   :mod:`.prompts`, schemas in :mod:`.schemas`).
3. somnid reads every candidate a sentence at a time (:mod:`.reading`): grounded in its
   lines with names never counting (:mod:`.checks`), about the person whose lines say it
   (:mod:`.attribution`), something particular and no prompt scaffolding
   (:mod:`.specifics`); two people's facts become two memories. Who and when come from the
   lines, never from the model; relative dates are resolved against the line's time
   (:mod:`.dates`).
4. For each candidate somnid finds the closest memories (hybrid recall). A near-duplicate is
   dropped, a clearly new one added; in between the model decides in one structured answer:
   add, merge (with the merged text), supersede (the old entry archived with a pointer) or
   known. A lasting fact about a person is a line of that person's entry (:mod:`.people`),
   reconciled with its lines the same way (:mod:`.reconcile`); somnid writes
   (:mod:`.writer`).
5. A log is marked processed only once every window of it was answered; a window whose
   answer stays invalid after one repair leaves the log pending for the next dream.
"""

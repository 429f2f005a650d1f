"""``dream.mode = "pipeline"`` (the default): a consolidation that somnid drives, in stages.

1. somnid reads each pending log itself and cuts it into windows that fit the model's
   context, each line numbered, with its speaker and time (:mod:`.windows`).
2. For each window the model gives one structured answer: the memories worth keeping, each
   with the lines it comes from (:mod:`.extract`, schemas in :mod:`.schemas`).
3. somnid checks every candidate (:mod:`.checks`): words mostly absent from its evidence,
   a copied placeholder, or a duplicate of another candidate refuse it. Who said it and when
   come from the evidence lines, never from the model; relative dates are resolved against
   the line's time (:mod:`.dates`).
4. For each candidate somnid finds the closest memories (hybrid recall). A near-duplicate is
   dropped, a clearly new one added; in between the model decides in one structured answer:
   add, merge (with the merged text), supersede (the old entry archived with a pointer) or
   known (:mod:`.decide`). somnid writes (:mod:`.writer`).
5. A log is marked processed only once every window of it was answered; a window whose
   answer stays invalid after one repair leaves the log pending for the next dream.
"""

-- A table of the DBA's own guarded with protect() (partitioned: protect() guards every
-- partition too), set up before the update; the analyst of the workload may read and write it.
CREATE TABLE public.notes (id int, body text, labels labelset) PARTITION BY RANGE (id);
CREATE TABLE public.notes_low PARTITION OF public.notes FOR VALUES FROM (0) TO (1000);
GRANT SELECT, INSERT ON public.notes, public.notes_low TO dump_analyst;
SELECT pg_labels.protect('public.notes');
INSERT INTO public.notes VALUES (1, 'an ops note', '{area:acme/ops}');

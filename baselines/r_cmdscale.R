# Classical MDS in R (stats::cmdscale) as a structdr external method.
# Spec: command = ["Rscript", "baselines/r_cmdscale.R"]
# Needs: R with the packages jsonlite and RcppCNPy (install.packages(c("jsonlite", "RcppCNPy"))).
args <- commandArgs(trailingOnly = TRUE)
workdir <- args[length(args)]
spec <- jsonlite::fromJSON(file.path(workdir, "params.json"))
x <- RcppCNPy::npyLoad(spec$input)
d <- as.integer(spec$params$dim)
y <- stats::cmdscale(dist(x), k = d)
RcppCNPy::npySave(file.path(workdir, "embedding.npy"), y)
cat(sprintf("cmdscale: %d samples -> %d dimensions\n", nrow(x), d))

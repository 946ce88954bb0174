# A generator in another language: sequential CART synthesis in R with rpart (the tree library R's synthpop calls).
#
# Not R's synthpop: CRAN is unreachable here and Debian ships no r-cran-synthpop.  This script follows the scheme of
# synthpop's syn(method = "cart") in a few lines of base R + rpart: the first column is drawn from its observed
# values; each later column is fitted by an rpart tree on the columns before it, and every synthetic row draws an
# observed value from the training rows in the leaf its (synthetic) predictors fall into.  Non-private.
#
# privgame's external-generator contract (docs/generators.md):
#   Rscript r_cart.R --train TRAIN.csv --schema SCHEMA.json --out OUT.csv --seed INT --rows INT [--minbucket 5]
#   Rscript r_cart.R --jobs JOBS.json [--minbucket 5]
# The same seed gives the same file (set.seed; R's default Mersenne-Twister and Rejection sampling).
suppressPackageStartupMessages({
  library(rpart)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
option <- function(name, default = NULL) {
  at <- match(paste0("--", name), args)
  if (is.na(at)) default else args[[at + 1]]
}

read_train <- function(path, schema) {
  table <- read.csv(path, stringsAsFactors = FALSE, check.names = FALSE, na.strings = character(0))
  for (col in schema$columns) {
    if (col$kind == "categorical") {
      table[[col$name]] <- factor(table[[col$name]], levels = unlist(col$categories))
    }
  }
  table
}

synthesise <- function(train, rows, minbucket) {
  names <- colnames(train)
  out <- train[sample.int(nrow(train), rows, replace = TRUE), names[1], drop = FALSE]
  rownames(out) <- NULL
  for (j in seq_along(names)[-1]) {
    target <- names[j]
    fit_data <- train[, names[1:j], drop = FALSE]
    tree <- rpart(reformulate(sprintf("`%s`", names[1:(j - 1)]), response = sprintf("`%s`", target)),
      data = fit_data, method = if (is.factor(train[[target]])) "class" else "anova",
      control = rpart.control(minbucket = minbucket, cp = 1e-8, xval = 0)
    )
    # each node's number as its prediction: predict() then routes a row to the number of its leaf
    nodes <- as.numeric(rownames(tree$frame))
    train_leaf <- nodes[tree$where]
    routed <- tree
    routed$frame$yval <- nodes
    new_leaf <- predict(routed, newdata = out[, names[1:(j - 1)], drop = FALSE], type = "vector")
    donors <- split(train[[target]], train_leaf)
    values <- vapply(as.character(new_leaf), function(leaf) {
      pool <- donors[[leaf]]
      as.character(pool[sample.int(length(pool), 1)])
    }, character(1), USE.NAMES = FALSE)
    out[[target]] <- if (is.factor(train[[target]])) factor(values, levels = levels(train[[target]])) else as.numeric(values)
  }
  out
}

run_job <- function(train_path, out_path, seed, rows, schema, minbucket) {
  set.seed(seed)
  train <- read_train(train_path, schema)
  synthetic <- synthesise(train, rows, minbucket)
  write.csv(synthetic, out_path, row.names = FALSE)
}

minbucket <- as.integer(option("minbucket", "5"))
jobs_path <- option("jobs")
if (!is.null(jobs_path)) {
  spec <- fromJSON(jobs_path, simplifyVector = FALSE)
  schema <- fromJSON(spec$schema, simplifyVector = FALSE)
  failed <- 0
  for (k in seq_along(spec$jobs)) {
    job <- spec$jobs[[k]]
    ok <- tryCatch({
      run_job(job$train, job$out, job$seed, job$rows, schema, minbucket)
      TRUE
    }, error = function(e) {
      message(sprintf("job %d (seed %d): %s", k, job$seed, conditionMessage(e)))
      FALSE
    })
    if (!ok) failed <- failed + 1
  }
  quit(status = if (failed > 0) 1 else 0)
} else {
  schema <- fromJSON(option("schema"), simplifyVector = FALSE)
  run_job(option("train"), option("out"), as.integer(option("seed")), as.integer(option("rows")), schema, minbucket)
}

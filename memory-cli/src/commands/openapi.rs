//! `memory openapi`: the OpenAPI document of `memory serve`'s HTTP API, as it serves it at
//! /v1/openapi.json; it needs no config.

use crate::failure::Failure;

/// Print the OpenAPI document of memory serve's HTTP API.
///
/// Example: memory openapi > openapi.json
#[derive(clap::Args)]
pub struct OpenapiArgs {}

/// `memory openapi`: the document on stdout.
pub fn run(_args: OpenapiArgs) -> Result<(), Failure> {
    println!("{}", memory_web::openapi_json());
    Ok(())
}
